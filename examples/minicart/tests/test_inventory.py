"""Tests for minicart.inventory."""

import pytest

from minicart.inventory import Stock, StockError


def make_stock():
    stock = Stock(low_threshold=5)
    stock.add("ABC-0001", 40)
    stock.add("XYZ-0002", 2)
    return stock


def test_add_accumulates():
    stock = Stock()
    assert stock.add("ABC-0001", 3) == 3
    assert stock.add("ABC-0001", 4) == 7
    assert stock.on_hand("ABC-0001") == 7
    assert stock.on_hand("NOP-0000") == 0


def test_add_rejects_non_positive_quantity():
    with pytest.raises(StockError):
        Stock().add("ABC-0001", 0)


def test_reserve_holds_units():
    stock = make_stock()
    assert stock.reserve("ABC-0001", 15, expires_at=100)
    assert stock.on_hand("ABC-0001") == 40
    assert stock.available("ABC-0001") == 25


def test_reserve_everything_available():
    stock = make_stock()
    assert stock.reserve("XYZ-0002", 2, expires_at=100)
    assert stock.available("XYZ-0002") == 0


def test_reserve_refuses_more_than_available():
    stock = make_stock()
    assert stock.reserve("ABC-0001", 30, expires_at=100)
    assert not stock.reserve("ABC-0001", 11, expires_at=100)
    assert stock.available("ABC-0001") == 10


def test_expire_frees_only_expired_reservations():
    stock = make_stock()
    stock.reserve("ABC-0001", 10, expires_at=100)
    stock.reserve("ABC-0001", 5, expires_at=500)
    assert stock.expire(now=50) == 0
    assert stock.expire(now=300) == 10
    assert stock.available("ABC-0001") == 35


def test_remove_ships_units():
    stock = make_stock()
    assert stock.remove("ABC-0001", 12) == 28
    assert stock.available("ABC-0001") == 28


def test_remove_cannot_take_reserved_units():
    stock = make_stock()
    stock.reserve("ABC-0001", 35, expires_at=100)
    with pytest.raises(StockError, match="only 5 units"):
        stock.remove("ABC-0001", 6)


def test_low_stock_lists_skus_under_threshold():
    stock = make_stock()
    stock.add("DEF-0003", 1)
    assert stock.is_low("XYZ-0002")
    assert not stock.is_low("ABC-0001")
    assert stock.low_stock() == ["DEF-0003", "XYZ-0002"]

"""Tests for minicart.pricing."""

import pytest

from minicart.pricing import (
    LineItem,
    add_tax,
    apply_discount,
    bulk_discount_percent,
    minor_units,
    order_total,
    round_money,
    subtotal,
    tiered_unit_price,
    to_minor,
)

TIERS = [(10, 4.5), (1, 5.0), (50, 4.0)]


@pytest.mark.parametrize(
    ("amount", "places", "expected"),
    [(2.675, 2, 2.68), (1.005, 2, 1.01), (10, 2, 10.0), (2.5, 0, 3.0), (0.1234, 3, 0.123)],
)
def test_round_money_rounds_half_up(amount, places, expected):
    assert round_money(amount, places) == expected


@pytest.mark.parametrize(("price", "percent", "expected"), [(100, 10, 90.0), (19.99, 25, 14.99), (50, 0, 50.0)])
def test_apply_discount(price, percent, expected):
    assert apply_discount(price, percent) == expected


@pytest.mark.parametrize("percent", [-5, 150])
def test_apply_discount_rejects_out_of_range_percent(percent):
    with pytest.raises(ValueError):
        apply_discount(10, percent)


def test_add_tax_default_and_custom_rate():
    assert add_tax(100) == 120.0
    assert add_tax(10, 0.07) == 10.7


@pytest.mark.parametrize(("quantity", "expected"), [(3, 0), (10, 5), (20, 5), (75, 10), (250, 15)])
def test_bulk_discount_percent(quantity, expected):
    assert bulk_discount_percent(quantity) == expected


@pytest.mark.parametrize(("quantity", "expected"), [(1, 5.0), (9, 5.0), (10, 4.5), (30, 4.5), (60, 4.0)])
def test_tiered_unit_price_picks_highest_reached_tier(quantity, expected):
    assert tiered_unit_price(quantity, TIERS) == expected


def test_tiered_unit_price_below_first_tier():
    with pytest.raises(ValueError, match="below the smallest tier"):
        tiered_unit_price(0, TIERS)


def test_minor_units():
    assert minor_units("jpy") == 0
    assert minor_units("EUR") == 2


def test_to_minor_returns_whole_units():
    assert isinstance(to_minor(19.99), int)
    assert to_minor(500, "JPY") > 0


def test_line_item_total_and_subtotal():
    items = [LineItem("ABC-0001", 9.99, 3), LineItem("XYZ-0002", 0.5)]
    assert items[0].total() == 29.97
    assert subtotal(items) == 30.47


def test_order_total_uses_coupon_discount():
    assert order_total([LineItem("ABC-0001", 9.99, 3)], discount_percent=10) == 32.36


def test_order_total_uses_bulk_discount_when_better():
    items = [LineItem("ABC-0001", 2.0, 30), LineItem("XYZ-0002", 1.5, 30)]
    assert order_total(items, discount_percent=5) == 113.4


def test_order_total_without_tax():
    assert order_total([LineItem("ABC-0001", 12.5, 2)], tax_rate=0) == 25.0

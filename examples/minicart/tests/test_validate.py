"""Tests for minicart.validate."""

import pytest

from minicart.validate import coupon_applies, is_valid_quantity, is_valid_sku, luhn_ok, order_errors

COUPON = {"code": "SPRING10", "expires": "2024-05-31", "min_total": 50}


@pytest.mark.parametrize(
    ("sku", "expected"),
    [
        ("ABC-1234", True),
        ("abc-1234", False),
        ("ABC_1234", False),
        ("ABC-12X4", False),
        ("AB1-1234", False),
        ("ABCD-1234", False),
        ("", False),
    ],
)
def test_is_valid_sku(sku, expected):
    assert is_valid_sku(sku) is expected


@pytest.mark.parametrize(("quantity", "expected"), [(1, True), (5, True), (0, False), (150, False), (-2, False)])
def test_is_valid_quantity(quantity, expected):
    assert is_valid_quantity(quantity) is expected


@pytest.mark.parametrize("quantity", [True, "3", 2.0, None])
def test_is_valid_quantity_rejects_non_integers(quantity):
    assert not is_valid_quantity(quantity)


def test_is_valid_quantity_custom_maximum():
    assert is_valid_quantity(500, max_quantity=1000)


def test_coupon_applies():
    assert coupon_applies(COUPON, 80.0, "2024-05-01")
    assert not coupon_applies(COUPON, 20.0, "2024-05-01")
    assert not coupon_applies(COUPON, 80.0, "2024-06-15")


@pytest.mark.parametrize(
    ("number", "expected"),
    [("4539 1488 0343 6467", True), ("4539-1488-0343-6468", False), ("79927398713", False), ("1234", False)],
)
def test_luhn_ok(number, expected):
    assert luhn_ok(number) is expected


def test_order_errors_accepts_good_order():
    order = {"items": [{"sku": "ABC-1234", "quantity": 2}], "email": "ann@example.com"}
    assert order_errors(order) == []


def test_order_errors_reports_each_problem():
    order = {"items": [{"sku": "ABC-1234", "quantity": 2}, {"sku": "bad", "quantity": 0}]}
    assert order_errors(order) == ["item 1: bad sku", "item 1: bad quantity"]


def test_order_errors_empty_order():
    assert order_errors({"items": []}) == ["order has no items"]

"""Tests for minicart.shipping."""

import asyncio

import pytest

from minicart.shipping import RateTable, delivery_days, parcels_needed, quote_all, shipping_cost, weight_band


@pytest.mark.parametrize(("weight", "band"), [(0.5, "light"), (3, "medium"), (10, "heavy"), (25, "freight")])
def test_weight_band(weight, band):
    assert weight_band(weight) == band


def test_weight_band_rejects_zero():
    with pytest.raises(ValueError):
        weight_band(0)


def test_rate_table_bands_include_their_maximum():
    table = RateTable([(5, 7.9), (1, 4.5)])
    assert table.base_rate(0.5) == 4.5
    assert table.base_rate(1) == 4.5
    assert table.base_rate(5) == 7.9


@pytest.mark.parametrize(
    ("weight", "zone", "subtotal", "expected"),
    [(3, "domestic", 20.0, 7.9), (3, "domestic", 80.0, 0.0), (3, "eu", 80.0, 11.85), (30, "world", 0.0, 72.5)],
)
def test_shipping_cost(weight, zone, subtotal, expected):
    assert shipping_cost(weight, zone, subtotal) == expected


@pytest.mark.parametrize(("weight", "expected"), [(10, 1), (60, 2), (65, 3), (0, 0)])
def test_parcels_needed(weight, expected):
    assert parcels_needed(weight) == expected


def test_delivery_days():
    assert delivery_days("domestic") == 2
    assert delivery_days("world", express=True) == 4


def test_quote_all():
    assert asyncio.run(quote_all([0.5, 3], "eu")) == [6.75, 11.85]

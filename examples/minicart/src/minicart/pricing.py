"""Prices: money rounding, percentage discounts, tax, bulk and tiered pricing, order totals."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

# Currencies whose smallest unit is not a hundredth (ISO 4217 minor units).
_MINOR_UNITS = {"JPY": 0, "KRW": 0, "BHD": 3, "KWD": 3}


def round_money(amount: float, places: int = 2) -> float:
    """Round half away from zero, the way a till does (``round`` would round 0.125 down to 0.12)."""
    factor = 10**places
    # The small nudge absorbs binary noise such as 1.005 * 100 == 100.49999999999999.
    rounded = int(abs(amount) * factor + 0.5 + 1e-9) / factor
    if amount < 0:
        return -rounded
    return rounded


def apply_discount(price: float, percent: float) -> float:
    """Price after taking ``percent`` off, rounded to cents."""
    if percent < 0 or percent > 100:
        raise ValueError(f"discount must be between 0 and 100 percent, got {percent}")
    return round_money(price * (100 - percent) / 100)


def add_tax(amount: float, rate: float = 0.2) -> float:
    """Gross amount for a net ``amount`` at tax ``rate`` (0.2 means 20 %)."""
    if rate < 0:
        raise ValueError(f"tax rate cannot be negative, got {rate}")
    return round_money(amount + amount * rate)


def bulk_discount_percent(quantity: int) -> int:
    """Percentage off granted for buying ``quantity`` units in one order."""
    if quantity >= 100:
        return 15
    if quantity >= 50:
        return 10
    if quantity >= 10:
        return 5
    return 0


def tiered_unit_price(quantity: int, tiers: list[tuple[int, float]]) -> float:
    """Unit price of the highest tier that ``quantity`` reaches.

    ``tiers`` holds ``(minimum_quantity, unit_price)`` pairs, in any order.
    """
    if not tiers:
        raise ValueError("no price tiers given")
    price = None
    for minimum, unit_price in sorted(tiers):
        if quantity >= minimum:
            price = unit_price
    if price is None:
        raise ValueError(f"quantity {quantity} is below the smallest tier")
    return price


@lru_cache(maxsize=None)
def minor_units(currency: str) -> int:
    """Number of decimals of a currency's smallest unit (2 unless listed otherwise)."""
    return _MINOR_UNITS.get(currency.upper(), 2)


def to_minor(amount: float, currency: str = "EUR") -> int:
    """``amount`` as an integer count of the currency's smallest unit (cents, yen, fils)."""
    return int(round_money(amount * 10 ** minor_units(currency), 0))


@dataclass(frozen=True)
class LineItem:
    """One cart line: a SKU bought ``quantity`` times at ``unit_price``."""

    sku: str
    unit_price: float
    quantity: int = 1

    def total(self) -> float:
        return round_money(self.unit_price * self.quantity)


def subtotal(items: list[LineItem]) -> float:
    """Sum of the line totals, before discounts and tax."""
    return round_money(sum(item.total() for item in items))


def order_total(items: list[LineItem], discount_percent: float = 0, tax_rate: float = 0.2) -> float:
    """Amount due: the better of the coupon and the bulk discount, then tax."""
    if not items:
        return 0.0
    units = sum(item.quantity for item in items)
    percent = max(discount_percent, bulk_discount_percent(units))
    return add_tax(apply_discount(subtotal(items), percent), tax_rate)

"""Checks on SKUs, quantities, coupons, card numbers and whole orders."""

from __future__ import annotations

SKU_PREFIX_LEN = 3
SKU_DIGITS = 4
MAX_QUANTITY = 99


def is_valid_sku(sku: str) -> bool:
    """SKUs look like ``ABC-1234``: three capital letters, a dash, four digits."""
    if len(sku) != SKU_PREFIX_LEN + 1 + SKU_DIGITS:
        return False
    prefix = sku[:SKU_PREFIX_LEN]
    digits = sku[SKU_PREFIX_LEN + 1 :]
    return prefix.isalpha() and prefix.isupper() and sku[SKU_PREFIX_LEN] == "-" and digits.isdigit()


def is_valid_quantity(quantity: object, max_quantity: int = MAX_QUANTITY) -> bool:
    """A whole number of units from 1 to ``max_quantity`` (``True`` is not a quantity)."""
    if isinstance(quantity, bool) or not isinstance(quantity, int):
        return False
    return 1 <= quantity <= max_quantity


def coupon_applies(coupon: dict, cart_total: float, today: str) -> bool:
    """Whether ``coupon`` (keys ``expires`` as an ISO date, ``min_total``, ``active``) applies today."""
    if not coupon.get("active", True):
        return False
    if today > coupon["expires"]:
        return False
    return cart_total >= coupon.get("min_total", 0)


def luhn_ok(number: str) -> bool:
    """Card number check digit (Luhn); spaces and dashes are ignored."""
    digits = [int(ch) for ch in number if ch.isdigit()]
    if len(digits) < 12 or len(digits) > 19:
        return False
    total = 0
    for position, digit in enumerate(reversed(digits)):
        if position % 2 == 1:
            digit *= 2
            if digit > 9:
                digit -= 9
        total += digit
    return total % 10 == 0


def order_errors(order: dict) -> list[str]:
    """Human-readable problems with an order dict; an empty list means it can be placed."""
    errors = []
    items = order.get("items") or []
    if not items:
        errors.append("order has no items")
    for index, item in enumerate(items):
        if not is_valid_sku(item.get("sku", "")):
            errors.append(f"item {index}: bad sku")
        if not is_valid_quantity(item.get("quantity")):
            errors.append(f"item {index}: bad quantity")
    email = order.get("email")
    if email is not None and "@" not in email:
        errors.append("bad email address")
    return errors

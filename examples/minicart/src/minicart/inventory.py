"""Stock levels per SKU, with timed reservations and low-stock alerts."""

from __future__ import annotations


class StockError(Exception):
    """A stock movement that cannot be applied (bad quantity, not enough units)."""


class Stock:
    """On-hand units per SKU; units held by open reservations are not available to others."""

    class Reservation:
        """A hold on ``quantity`` units of ``sku`` until time ``expires_at`` (seconds)."""

        def __init__(self, sku: str, quantity: int, expires_at: int) -> None:
            self.sku = sku
            self.quantity = quantity
            self.expires_at = expires_at

        def is_expired(self, now: int) -> bool:
            return now >= self.expires_at

    def __init__(self, low_threshold: int = 5) -> None:
        self.low_threshold = low_threshold
        self._on_hand: dict[str, int] = {}
        self._reservations: list[Stock.Reservation] = []

    def add(self, sku: str, quantity: int) -> int:
        """Receive ``quantity`` units; returns the new on-hand count."""
        if quantity <= 0:
            raise StockError(f"cannot add {quantity} units of {sku}")
        self._on_hand[sku] = self._on_hand.get(sku, 0) + quantity
        return self._on_hand[sku]

    def on_hand(self, sku: str) -> int:
        return self._on_hand.get(sku, 0)

    def available(self, sku: str) -> int:
        held = sum(r.quantity for r in self._reservations if r.sku == sku)
        return self.on_hand(sku) - held

    def reserve(self, sku: str, quantity: int, expires_at: int) -> bool:
        """Hold units for a cart; False when not enough are available."""
        if quantity <= 0 or quantity > self.available(sku):
            return False
        self._reservations.append(Stock.Reservation(sku, quantity, expires_at))
        return True

    def expire(self, now: int) -> int:
        """Drop reservations that have run out at time ``now``; returns the units they freed."""
        kept = [r for r in self._reservations if not r.is_expired(now)]
        freed = sum(r.quantity for r in self._reservations) - sum(r.quantity for r in kept)
        self._reservations = kept
        return freed

    def release(self, sku: str) -> int:
        """Cancel every reservation of ``sku`` (its cart was emptied); returns the units freed."""
        freed = 0
        for reservation in [r for r in self._reservations if r.sku == sku]:
            self._reservations.remove(reservation)
            freed += reservation.quantity
        return freed

    def remove(self, sku: str, quantity: int) -> int:
        """Ship ``quantity`` available units; returns what is left on hand."""
        if quantity <= 0:
            raise StockError(f"cannot remove {quantity} units of {sku}")
        if quantity > self.available(sku):
            raise StockError(f"only {self.available(sku)} units of {sku} available")
        self._on_hand[sku] -= quantity
        return self._on_hand[sku]

    def is_low(self, sku: str) -> bool:
        return self.available(sku) <= self.low_threshold

    def low_stock(self) -> list[str]:
        """SKUs at or below the low-stock threshold, sorted."""
        return sorted(sku for sku in self._on_hand if self.is_low(sku))

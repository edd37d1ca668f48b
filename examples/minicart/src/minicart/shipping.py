"""Shipping: weight bands, rate tables, zones, the free-shipping threshold and parcel counts."""

from __future__ import annotations

import asyncio

FREE_SHIPPING_THRESHOLD = 50.0
ZONE_MULTIPLIER = {"domestic": 1.0, "eu": 1.5, "world": 2.5}
DELIVERY_DAYS = {"domestic": 2, "eu": 4, "world": 8}


def weight_band(weight_kg: float) -> str:
    if weight_kg <= 0:
        raise ValueError(f"weight must be positive, got {weight_kg}")
    if weight_kg < 1:
        return "light"
    if weight_kg < 5:
        return "medium"
    if weight_kg < 20:
        return "heavy"
    return "freight"


class RateTable:
    """Base prices by weight: each band covers parcels up to its maximum weight."""

    class Band:
        def __init__(self, max_kg: float, price: float) -> None:
            self.max_kg = max_kg
            self.price = price

        def covers(self, weight_kg: float) -> bool:
            return weight_kg <= self.max_kg

    def __init__(self, bands: list[tuple[float, float]]) -> None:
        self.bands = tuple(RateTable.Band(max_kg, price) for max_kg, price in sorted(bands))

    def base_rate(self, weight_kg: float) -> float:
        for band in self.bands:
            if band.covers(weight_kg):
                return band.price
        raise ValueError(f"no band covers {weight_kg} kg")


DEFAULT_RATES = RateTable([(1, 4.5), (5, 7.9), (20, 14.0), (40, 29.0)])


def shipping_cost(
    weight_kg: float, zone: str = "domestic", subtotal: float = 0.0, rates: RateTable = DEFAULT_RATES
) -> float:
    """Price of shipping one parcel; domestic orders above the threshold ship free."""
    if zone not in ZONE_MULTIPLIER:
        raise ValueError(f"unknown zone {zone!r}")
    if zone == "domestic" and subtotal >= FREE_SHIPPING_THRESHOLD:
        return 0.0
    return round(rates.base_rate(weight_kg) * ZONE_MULTIPLIER[zone], 2)


def parcels_needed(weight_kg: float, max_parcel_kg: int = 30) -> int:
    """How many parcels a shipment of ``weight_kg`` needs when each may weigh ``max_parcel_kg``."""
    grams = int(round(weight_kg * 1000))
    if grams <= 0:
        return 0
    capacity = max_parcel_kg * 1000
    return (grams + capacity - 1) // capacity


def delivery_days(zone: str, express: bool = False) -> int:
    days = DELIVERY_DAYS[zone]
    if express:
        return max(1, days // 2)
    return days


async def quote_all(weights_kg: list[float], zone: str = "domestic") -> list[float]:
    """Quotes for several parcels; yields to the event loop between them, as a carrier API call would."""
    quotes = []
    for weight in weights_kg:
        await asyncio.sleep(0)
        quotes.append(shipping_cost(weight, zone))
    return quotes

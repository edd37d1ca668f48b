"""Lengths: feet and metres, and parsing strings such as "12 ft" or "3.5m"."""

from __future__ import annotations

FOOT_IN_METRES = 0.3048
UNITS = {"m": 1.0, "cm": 0.01, "mm": 0.001, "km": 1000.0, "ft": FOOT_IN_METRES, "in": 0.0254}


def feet_to_metres(feet: float) -> float:
    return round(feet * FOOT_IN_METRES, 4)


def metres_to_feet(metres: float) -> float:
    return round(metres / FOOT_IN_METRES, 4)


def parse_length(text: str) -> float:
    """Metres in a string like "12 ft", "3.5m" or "20 cm"; a bare number is in metres."""
    cleaned = text.strip().lower().replace(" ", "")
    if not cleaned:
        raise ValueError("empty length")
    for unit in sorted(UNITS, key=len, reverse=True):
        if cleaned.endswith(unit):
            number = cleaned[: -len(unit)]
            return float(number) * UNITS[unit]
    return float(cleaned)

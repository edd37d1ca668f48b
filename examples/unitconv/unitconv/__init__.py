"""Unit conversions and rounding helpers."""

from unitconv.length import feet_to_metres, metres_to_feet, parse_length
from unitconv.temperature import celsius_to_fahrenheit, fahrenheit_to_celsius, comfort_label
from unitconv.cooking import scale_recipe, cups_to_ml, round_to_step

__all__ = ["feet_to_metres", "metres_to_feet", "parse_length", "celsius_to_fahrenheit", "fahrenheit_to_celsius",
           "comfort_label", "scale_recipe", "cups_to_ml", "round_to_step"]

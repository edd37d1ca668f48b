"""Temperatures: Celsius and Fahrenheit, and a label for how a temperature feels."""

from __future__ import annotations


def celsius_to_fahrenheit(celsius: float) -> float:
    return round(celsius * 9 / 5 + 32, 2)


def fahrenheit_to_celsius(fahrenheit: float) -> float:
    return round((fahrenheit - 32) * 5 / 9, 2)


def comfort_label(celsius: float) -> str:
    if celsius < 0:
        return "freezing"
    if celsius < 12:
        return "cold"
    if celsius < 24:
        return "mild"
    if celsius < 30:
        return "warm"
    return "hot"

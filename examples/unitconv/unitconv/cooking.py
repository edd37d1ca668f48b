"""Cooking: scaling recipes, cups to millilitres, rounding to a measuring step."""

from __future__ import annotations

CUP_ML = 240


def cups_to_ml(cups: float) -> int:
    return int(round(cups * CUP_ML))


def round_to_step(amount: float, step: float = 0.25) -> float:
    """`amount` rounded to the nearest multiple of `step` (a measuring spoon's size)."""
    if step <= 0:
        raise ValueError(f"step must be positive, got {step}")
    return round(round(amount / step) * step, 4)


def scale_recipe(ingredients: dict[str, float], servings: int, base_servings: int = 4) -> dict[str, float]:
    """Every amount scaled from `base_servings` to `servings`, rounded to a quarter."""
    if servings < 1 or base_servings < 1:
        raise ValueError("servings must be at least 1")
    factor = servings / base_servings
    return {name: round_to_step(amount * factor) for name, amount in ingredients.items()}

"""How numbers read in results.md and report.html (one place, so both say the same)."""

from __future__ import annotations


def rate(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def num(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def usd(value: float, unpriced: int = 0) -> str:
    text = f"${value:.4f}"
    return f"{text} (+{unpriced} unpriced)" if unpriced else text


def coverage_gain(value: float | None, tasks: int) -> str:
    return "n/a (no task has uncovered lines)" if value is None else f"{value:.3f} over {tasks} task(s)"

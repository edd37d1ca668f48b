"""Order statistics: averages, percentiles, clamping, moving averages and histograms."""

from __future__ import annotations

import math


def mean(values: list[float]) -> float:
    if not values:
        raise ValueError("mean of no values")
    return sum(values) / len(values)


def median(values: list[float]) -> float:
    if not values:
        raise ValueError("median of no values")
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2 == 1:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile: the smallest value with at least ``p`` % of the values at or below it."""
    if p < 0 or p > 100:
        raise ValueError(f"percentile must be between 0 and 100, got {p}")
    if not values:
        raise ValueError("percentile of no values")
    ordered = sorted(values)
    if p == 0:
        return ordered[0]
    rank = math.ceil(p / 100 * len(ordered))
    return ordered[rank - 1]


def clamp(value: float, low: float, high: float) -> float:
    if low > high:
        raise ValueError(f"empty range [{low}, {high}]")
    if value < low:
        return low
    if value > high:
        return high
    return value


def moving_average(values: list[float], window: int) -> list[float]:
    """Mean of each run of ``window`` consecutive values."""
    if window <= 0:
        raise ValueError("window must be positive")
    if window > len(values):
        return []
    return [sum(values[i : i + window]) / window for i in range(len(values) - window + 1)]


def histogram(values: list[float], bucket_size: int) -> dict[int, int]:
    """Counts per bucket, keyed by the bucket's lower edge, in ascending order."""
    counts: dict[int, int] = {}
    for value in values:
        start = int(value // bucket_size) * bucket_size
        counts[start] = counts.get(start, 0) + 1
    return dict(sorted(counts.items()))

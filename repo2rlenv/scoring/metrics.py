"""The scoring service's counters: rate, latency percentiles, failures and rejections by kind.

Kept in memory, over a bounded window of recent scores: a service that runs for a week must not grow, and
a trainer watching `/metrics` wants the recent latency, not the mean since start.
"""

from __future__ import annotations

import math
import threading
import time
from collections import Counter, deque
from typing import Callable

from repo2rlenv.scoring.models import Score
from repo2rlenv.scoring.wire import Latency

# The rate is over this many recent seconds; the percentiles over the last WINDOW scores.
RATE_SPAN_SEC = 60.0
WINDOW = 4096


def percentile(sorted_values: list[float], p: float) -> float | None:
    """Nearest-rank percentile (p in 0..1) of an ascending list; None when it is empty."""
    if not sorted_values:
        return None
    rank = max(1, math.ceil(p * len(sorted_values)))
    return sorted_values[rank - 1]


class Metrics:
    """Thread-safe: the HTTP server answers each request on its own thread."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, window: int = WINDOW):
        self._clock = clock
        self._lock = threading.Lock()
        self._started = clock()
        self._recent: deque[tuple[float, float]] = deque(maxlen=window)  # (answered at, latency)
        self._total = 0
        self._failures: Counter[str] = Counter()
        self._rejected: Counter[str] = Counter()
        self._groups: Counter[int] = Counter()  # gradings by how many requests they scored together

    def scored(self, score: Score, latency_sec: float) -> None:
        with self._lock:
            self._total += 1
            self._recent.append((self._clock(), latency_sec))
            if score.error is not None:
                self._failures[score.error.value] += 1

    def grouped(self, size: int) -> None:
        with self._lock:
            self._groups[size] += 1

    def group_sizes(self) -> dict[str, int]:
        """Gradings since start by group size ("1": scored alone); JSON keys, so strings."""
        with self._lock:
            return {str(size): n for size, n in sorted(self._groups.items())}

    def rejected(self, reason: str) -> None:
        with self._lock:
            self._rejected[reason] += 1

    def uptime(self) -> float:
        return self._clock() - self._started

    def latency(self) -> Latency:
        with self._lock:
            values = sorted(latency for _, latency in self._recent)
        return Latency(p50=percentile(values, 0.5), p99=percentile(values, 0.99), window=len(values))

    def rate(self) -> float:
        now = self._clock()
        span = min(RATE_SPAN_SEC, max(now - self._started, 1e-9))
        with self._lock:
            recent = sum(1 for at, _ in self._recent if at >= now - span)
        return recent / span

    def totals(self) -> tuple[int, dict[str, int], dict[str, int]]:
        with self._lock:
            return self._total, dict(self._failures), dict(self._rejected)

"""Which covering tests the differential oracle's harvest runs (issue 34 item 1: stop early on what cannot pay).

The harvest runs a candidate's covering tests under a tracer to record the calls they make. On a suite
whose tests are slow (a client library's tests against a local server) a function can be covered by
hundreds of them: requests' adapters by 150-250 tests, 61 s of baseline time and about 70 s of harvest
for each candidate, most of which found one to three calls it could write down. So the harvest takes the
fastest covering tests up to `harvest_budget_sec` of their baseline time (unit tests, which call the
function most directly, are the fast ones) and runs them in the suite's own order; a function whose
covering tests fit the budget sees no change at all.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class HarvestTests:
    tests: list[str]  # the covering tests the harvest runs, in their original order
    of: int  # how many covering tests there were
    seconds: float  # their baseline time
    of_seconds: float  # all the covering tests' baseline time

    @property
    def cut(self) -> bool:
        return len(self.tests) < self.of

    def detail(self, budget_sec: float) -> str:
        return (f"the harvest ran the {len(self.tests)} fastest of {self.of} covering tests "
                f"({self.seconds:.1f}s of {self.of_seconds:.1f}s baseline time; harvest_budget_sec={budget_sec:g})")


def harvest_tests(covering: list[str], durations: dict[str, float], budget_sec: float) -> HarvestTests:
    """The covering tests the harvest runs: all of them when their baseline time fits `budget_sec` (or the
    budget is 0), else the fastest that fit (at least one), in their original order. A test the baseline
    has no time for counts as the median of the known ones (it ran in another session, or was added)."""
    known = sorted(durations[t] for t in covering if t in durations)
    typical = known[len(known) // 2] if known else 0.0
    cost = {t: durations.get(t, typical) for t in covering}
    total = sum(cost.values())
    if budget_sec <= 0 or total <= budget_sec:
        return HarvestTests(list(covering), len(covering), total, total)
    chosen: set[str] = set()
    spent = 0.0
    for test in sorted(covering, key=lambda t: cost[t]):
        if chosen and spent + cost[test] > budget_sec:
            break
        chosen.add(test)
        spent += cost[test]
    return HarvestTests([t for t in covering if t in chosen], len(covering), spent, total)

"""A time share of a function's covering tests (issue 34 item 1: stop early on what cannot pay).

Two stages run a candidate's covering tests once more: the differential oracle's harvest (under a tracer,
to record the calls they make) and the twin check (on twins of A, which must keep passing them). On a suite
whose tests are slow (a client library's tests against a local server) a function can be covered by
hundreds of them: requests' adapters by 150-250 tests, 61 s of baseline time, so about 70 s of harvest for
each candidate (most of which recorded one to three calls) and two minutes of twin check. So each stage
takes the fastest covering tests up to its share of their baseline time (unit tests, which call the
function most directly, are the fast ones) and runs them in the suite's own order; a function whose
covering tests fit the share sees no change at all.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class TestShare:
    __test__ = False  # not a pytest class, whatever its name

    tests: list[str]  # the covering tests the stage runs, in their original order
    of: int  # how many covering tests there were
    seconds: float  # their baseline time
    of_seconds: float  # all the covering tests' baseline time

    @property
    def cut(self) -> bool:
        return len(self.tests) < self.of

    def detail(self, stage: str, option: str, budget_sec: float) -> str:
        return (f"{stage} ran the {len(self.tests)} fastest of {self.of} covering tests "
                f"({self.seconds:.1f}s of {self.of_seconds:.1f}s baseline time; {option}={budget_sec:g})")


def fastest_tests(covering: list[str], durations: dict[str, float], budget_sec: float) -> TestShare:
    """The covering tests a stage runs: all of them when their baseline time fits `budget_sec` (or the
    budget is 0), else the fastest that fit (at least one), in their original order. A test the baseline
    has no time for counts as the median of the known ones (it ran in another session, or was added)."""
    known = sorted(durations[t] for t in covering if t in durations)
    typical = known[len(known) // 2] if known else 0.0
    cost = {t: durations.get(t, typical) for t in covering}
    total = sum(cost.values())
    if budget_sec <= 0 or total <= budget_sec:
        return TestShare(list(covering), len(covering), total, total)
    chosen: set[str] = set()
    spent = 0.0
    for test in sorted(covering, key=lambda t: cost[t]):
        if chosen and spent + cost[test] > budget_sec:
            break
        chosen.add(test)
        spent += cost[test]
    return TestShare([t for t in covering if t in chosen], len(covering), spent, total)

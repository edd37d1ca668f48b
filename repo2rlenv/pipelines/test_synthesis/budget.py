"""Time as a resource of one run (issue 34 item 1): the run's deadline, what each stage is expected to cost,
and where the time went.

A run has one `Clock` (its `time_budget_min`, counted from its start). Before a costly stage of a
candidate starts, the synthesizer asks whether the time left affords that stage's expected cost; when it
does not, the candidate is *deferred*: not decided, so a rerun with more time picks it up again. Each
candidate also has a share of its own (`candidate_budget_sec`): one whose stages have used it up is
dropped, because a rerun would spend the same again. Expected costs start from the baseline's durations
and then follow what the run measured (`StageCosts`), so a slow suite is priced as slow after one try.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

from pydantic import BaseModel, ConfigDict, Field

# The drop of a candidate whose own stages used up `candidate_budget_sec` (counted as it is in the summary).
OVER_SHARE = "over its time share (candidate_budget_sec)"
# Summary stage of the candidates put back for a rerun because the run's budget could not afford them.
DEFERRED = "deferred by the time budget (a rerun continues)"

# The synthesizer's stages of one candidate, in order. `suite` stages run the whole suite once each (their
# first estimate is the baseline's duration); the others start from a small fixed guess and learn.
STAGES: dict[str, str] = {
    "oracle": "guess",
    "whole suite on A": "suite",
    "whole suite on B": "suite",
    "siblings": "guess",
    "twins": "guess",
    "publish": "guess",
}
FIRST_GUESS_SEC = {"oracle": 30.0, "siblings": 20.0, "twins": 15.0, "publish": 60.0}


class Clock:
    """The run's deadline (monotonic seconds), or none."""

    def __init__(self, minutes: float = 0.0, *, now: float | None = None):
        start = time.monotonic() if now is None else now
        self.minutes = minutes
        self.at: float | None = start + 60.0 * minutes if minutes else None

    def left(self) -> float:
        return math.inf if self.at is None else self.at - time.monotonic()

    def passed(self) -> bool:
        return self.left() <= 0

    def affords(self, seconds: float) -> bool:
        return self.left() >= seconds


# A stage's expected cost looks at its last RECENT measurements; from OUTLIER_FROM of them on, the single
# largest is left out: on lark one publish took 138 s against the usual 10-20 s, and as the maximum it made
# the run keep 146 s back before every later candidate, which then ran out of time with work undone.
RECENT = 5
OUTLIER_FROM = 3


class StageCosts:
    """What each stage is expected to cost: the largest of the run's last measurements but one outlier, or
    the first guess. The largest, not the mean: a deferral costs a rerun, an overrun costs the user's
    deadline; but one slow measurement alone does not price every later candidate."""

    def __init__(self, suite_sec: float):
        self.suite_sec = suite_sec
        self._seen: dict[str, list[float]] = defaultdict(list)

    def expect(self, stage: str) -> float:
        seen = self._seen.get(stage)
        if seen:
            recent = sorted(seen[-RECENT:])
            return recent[-2] if len(recent) >= OUTLIER_FROM else recent[-1]
        return self.suite_sec if STAGES.get(stage) == "suite" else FIRST_GUESS_SEC.get(stage, 10.0)

    def record(self, stage: str, seconds: float) -> None:
        self._seen[stage].append(seconds)


@dataclass(frozen=True, slots=True)
class Deferred:
    """A candidate put back undecided: the run's time left does not afford `stage` (a rerun continues)."""

    stage: str
    detail: str = ""


class CandidateTimer:
    """One candidate's stage seconds, against its share and the run's clock."""

    def __init__(self, clock: Clock, costs: StageCosts, share_sec: float):
        self.clock, self.costs, self.share_sec = clock, costs, share_sec
        self.seconds: dict[str, float] = {}
        self._start = time.monotonic()

    def spent(self) -> float:
        return time.monotonic() - self._start

    def over_share(self) -> bool:
        return self.share_sec > 0 and self.spent() > self.share_sec

    def affords(self, stage: str) -> bool:
        return self.clock.affords(self.costs.expect(stage))

    def before(self, stage: str) -> "Deferred | None":
        """Deferred when `stage` cannot start: the candidate's share is spent (`over_share`, which the
        caller turns into a drop) or the run's time left does not afford the stage's expected cost."""
        if self.over_share():
            return Deferred(OVER_SHARE, f"{self.spent():.0f}s spent before {stage} (candidate_budget_sec="
                                        f"{self.share_sec:g})")
        if not self.affords(stage):
            return Deferred(stage, f"{stage} is expected to take {self.costs.expect(stage):.0f}s, "
                                   f"{max(0.0, self.clock.left()):.0f}s of the time budget left")
        return None

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        start = time.monotonic()
        try:
            yield
        finally:
            took = time.monotonic() - start
            self.seconds[name] = round(self.seconds.get(name, 0.0) + took, 2)
            self.costs.record(name, took)


class SlowItem(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    seconds: float
    detail: str = ""


class TimeReport(BaseModel):
    """Where a run's time went (summary.json `time`)."""

    model_config = ConfigDict(extra="forbid")

    budget_min: float = Field(description="time_budget_min (0: none).")
    elapsed_sec: float
    stages_sec: dict[str, float] = Field(description="Wall seconds per pipeline stage (environment, baseline, ...).")
    slowest_tests: list[SlowItem] = Field(description="The baseline's slowest tests on A.")
    slowest_candidates: list[SlowItem] = Field(description="Candidates whose gates and synthesis took longest.")

    def line(self) -> str:
        """One line: the stages that took most, for a run that stopped or made nothing."""
        top = sorted(self.stages_sec.items(), key=lambda kv: -kv[1])[:3]
        parts = [f"{name} {sec / 60:.1f} min" for name, sec in top]
        slow = f"; slowest test {self.slowest_tests[0].name} {self.slowest_tests[0].seconds:.1f}s" \
            if self.slowest_tests else ""
        return f"{self.elapsed_sec / 60:.1f} min: " + ", ".join(parts) + slow


def slowest(durations: dict[str, float], n: int = 5) -> list[SlowItem]:
    top = sorted(durations.items(), key=lambda kv: -kv[1])[:n]
    return [SlowItem(name=k, seconds=round(v, 2)) for k, v in top if round(v, 2) > 0]

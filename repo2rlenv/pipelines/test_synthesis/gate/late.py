"""The late gate: the repo's whole suite on B, run once a candidate has an oracle.

The gates before the oracle ran only the tests covering the changed line; a change the rest of the suite
catches (through another caller, a subtest, a doctest) is not a test gap. It runs after the oracle because
most survivors never get one, and before the siblings and twins because those cost many runs each.
"""

from __future__ import annotations

from repo2rlenv.baseline.junit import Outcome
from repo2rlenv.baseline.runner import BaselineReport
from repo2rlenv.pipelines.test_synthesis.candidates import Candidate, Drop, GateResult, SkipReason
from repo2rlenv.pipelines.test_synthesis.trials import Trials

# Quarantined tests deselected from the whole-suite run on B at most (an argv stays well under its limit).
_MAX_DESELECT = 2000
GATE_NAME = "whole suite on B"


def suite_on_b(cand: Candidate, trials: Trials, baseline: BaselineReport, timeout: float) -> GateResult | Drop:
    """The passed gate, or a drop saying why the task is wrong: a stable-passing test that does not pass
    on B. Quarantined tests are deselected: they fail on A already, and tests that wait for a network are
    slow to fail."""
    why = suite_notices_b(cand, trials, baseline, timeout)
    if why is not None:
        return Drop(SkipReason.suite_notices_b, why)
    return GateResult(gate=GATE_NAME, passed=True, detail=f"{len(baseline.stable_passing)} stable tests pass on B")


def suite_notices_b(cand: Candidate, trials: Trials, baseline: BaselineReport, timeout: float) -> str | None:
    """Why the whole suite notices B, or None when every stable-passing test passes there."""
    deselect = [a for t in sorted(baseline.quarantined)[:_MAX_DESELECT] for a in ("--deselect", t)]
    run = trials.run(cand.files_b, [], timeout=timeout, extra_args=deselect)
    if run.timed_out:
        return f"the whole suite did not finish on B within {timeout:.0f}s"
    # A stable test missing on B was not collected there (B broke its module's import): it did not pass.
    noticed = [t for t in baseline.stable_passing
               if t not in run.results or run.results[t].outcome != Outcome.passed]
    if not noticed:
        return None
    first = run.results.get(noticed[0])
    why = first.message if first is not None and first.message else "not collected on B"
    return f"{len(noticed)} of {len(baseline.stable_passing)} stable tests fail on B, first {noticed[0]}: {why}"

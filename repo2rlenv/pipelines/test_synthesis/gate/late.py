"""The late gate: the repo's whole suite on B, run once a candidate has an oracle.

The gates before the oracle ran only the tests covering the changed line; a change the rest of the suite
catches (through another caller, a subtest, a doctest) is not a test gap. It runs after the oracle because
most survivors never get one, and before the siblings and twins because those cost many runs each.

A test that fails on B counts only if it still passes on A in the same session: the session is not the
fresh one the baseline ran in, and what ran since may have changed the machine outside the repo's copies
(tinydb: a replayed `JSONStorage(path, create_dirs=True)` created the directory whose absence
`test_json_invalid_directory` asserts, and every candidate with an oracle after it was dropped as noticed).
"""

from __future__ import annotations

import bisect

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
    deselect = [a for t in deselectable(baseline.quarantined, baseline.stable_passing) for a in ("--deselect", t)]
    run = trials.run(cand.files_b, [], timeout=timeout, extra_args=deselect)
    if run.timed_out:
        return f"the whole suite did not finish on B within {timeout:.0f}s"
    # A stable test missing on B was not collected there (B broke its module's import): it did not pass.
    noticed = [t for t in baseline.stable_passing
               if t not in run.results or run.results[t].outcome != Outcome.passed]
    if noticed:
        noticed = _not_drift(noticed, trials, timeout)
    if not noticed:
        return None
    first = run.results.get(noticed[0])
    why = first.message if first is not None and first.message else "not collected on B"
    return f"{len(noticed)} of {len(baseline.stable_passing)} stable tests fail on B, first {noticed[0]}: {why}"


def deselectable(quarantined, stable_passing) -> list[str]:
    """The quarantined tests that `--deselect` can leave out without leaving out a stable one too: pytest
    deselects every node id that *starts with* the given one, so deselecting construct's quarantined
    `test_core.py::test_numpy` also dropped the stable `test_numpy_error`, which then counted as "not
    collected on B" and dropped every candidate that had an oracle. Such a quarantined test runs on B
    instead; its outcome is not read."""
    stable = sorted(stable_passing)
    out = []
    for test in sorted(quarantined):
        i = bisect.bisect_left(stable, test)
        if i < len(stable) and stable[i].startswith(test):
            continue
        out.append(test)
    return out[:_MAX_DESELECT]


def _not_drift(noticed: list[str], trials: Trials, timeout: float) -> list[str]:
    """The tests of `noticed` that pass on A now: the others fail whatever the change (the session drifted
    since the baseline), so they tell nothing about B."""
    on_a = trials.run({}, noticed, timeout=timeout)
    if on_a.timed_out:
        return noticed
    return [t for t in noticed if t in on_a.results and on_a.results[t].outcome == Outcome.passed]

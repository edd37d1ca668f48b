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

from repo2rlenv.baseline.junit import Outcome
from repo2rlenv.baseline.runner import BaselineReport
from repo2rlenv.pipelines.test_synthesis.candidates import Candidate, Drop, GateResult, SkipReason
from repo2rlenv.pipelines.test_synthesis.trials import Trials

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
    # Exactly the quarantined ids (the plugin's deselect, not pytest's, which drops every id they prefix).
    run = trials.run(cand.files_b, [], timeout=timeout, deselect=sorted(baseline.quarantined))
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


def _not_drift(noticed: list[str], trials: Trials, timeout: float) -> list[str]:
    """The tests of `noticed` that pass on A now: the others fail whatever the change (the session drifted
    since the baseline), so they tell nothing about B."""
    on_a = trials.run({}, noticed, timeout=timeout)
    if on_a.timed_out:
        return noticed
    return [t for t in noticed if t in on_a.results and on_a.results[t].outcome == Outcome.passed]

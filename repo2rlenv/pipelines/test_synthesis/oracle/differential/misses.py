"""Why the differential oracle found no test for a change: one class per miss, read back from a run's records.

`synthesize_differential` writes its `Diagnosis` into a candidate dropped for "no distinguishing input found"
as the detail of its skip reason (``diagnosis: {json}``, read back by `skip_detail`); `classify_miss` turns a
skip reason and that detail into a `MissClass` and a short note, so a finished dataset can be analysed
without rerunning anything.
"""

from __future__ import annotations

import json
from enum import StrEnum

from pydantic import ValidationError

from repo2rlenv.pipelines.test_synthesis.candidates import Candidate
from repo2rlenv.pipelines.test_synthesis.oracle.differential.differential import DIAGNOSIS_PREFIX, Diagnosis, NoOracle
# Most of the replayed calls failing to rebuild their inputs makes the replay itself the miss.
ERROR_SHARE = 0.5


class MissClass(StrEnum):
    """Why no differential oracle was produced, most specific first."""

    PROBE_FAILED = "probe failed (target not importable or not describable)"
    NO_PUBLIC_ENTRY = "private, and no public function or method reaches it"
    NO_CALLS = "no recorded calls (the covering tests never called an entry)"
    NOT_RECREATABLE = "calls seen, but their inputs cannot be re-created"
    REPLAY_ERRORS = "recorded inputs fail to rebuild on replay"
    OPAQUE_ONLY = "A and B differ only in values a test cannot write"
    UNSTABLE_ONLY = "A and B differ only where A itself is nondeterministic"
    B_BREAKS_ONLY = "B only hangs or breaks (no assertable difference)"
    CUT = "the search's time share ran out first (oracle_search_sec)"
    NO_DIFFERENCE = "no replayed input (recorded or perturbed) tells A from B"
    NOT_SEPARATED = "tests written, but they do not fail on B or pass on A when run"
    TOO_LONG = "the tests do not fit the line budget"
    OTHER = "other"


def skip_detail(cand: Candidate) -> str | None:
    """The detail recorded with a candidate's skip reason (kept as the failed gate of that name)."""
    details = [g.detail for g in cand.gates if g.gate == cand.skip_reason and not g.passed]
    return details[-1] if details else None


def parse_diagnosis(detail: str | None) -> Diagnosis | None:
    if not detail or not detail.startswith(DIAGNOSIS_PREFIX):
        return None
    try:
        return Diagnosis.model_validate_json(detail[len(DIAGNOSIS_PREFIX):])
    except (ValidationError, json.JSONDecodeError):
        return None


def _top(counts: dict[str, int], n: int = 3) -> str:
    return ", ".join(f"{k}×{v}" for k, v in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:n])


def classify_miss(reason: str | None, detail: str | None) -> tuple[MissClass, str]:
    """The miss class of a candidate dropped at the oracle step, and a note (types, errors) to go with it."""
    simple = {
        NoOracle.PROBE_FAILED.value: MissClass.PROBE_FAILED,
        NoOracle.NOT_SEPARATED.value: MissClass.NOT_SEPARATED,
        NoOracle.TOO_LONG.value: MissClass.TOO_LONG,
    }
    if reason in simple:
        return simple[reason], (detail or "")[:200]
    diag = parse_diagnosis(detail)
    if reason != NoOracle.NO_DISTINGUISHING_INPUT.value or diag is None:
        return MissClass.OTHER, f"{reason}: {(detail or '')[:160]}"
    if not diag.entries:
        return MissClass.NO_PUBLIC_ENTRY, ""
    if diag.harvested == 0 and diag.skipped:
        return MissClass.NOT_RECREATABLE, _top(diag.skipped)
    if diag.harvested == 0 and not diag.tried:
        return MissClass.NO_CALLS, ""
    errors = diag.outcomes.get("error", 0)
    if diag.tried and errors >= ERROR_SHARE * diag.tried:
        return MissClass.REPLAY_ERRORS, "; ".join(diag.errors)[:200]
    if diag.opaque_differences:
        return MissClass.OPAQUE_ONLY, _top(diag.opaque_differences)
    if diag.unstable:
        return MissClass.UNSTABLE_ONLY, f"{diag.unstable} call(s)"
    if diag.b_not_returning:
        return MissClass.B_BREAKS_ONLY, f"{diag.b_not_returning} call(s)"
    note = f"{diag.harvested} recorded, {diag.tried} tried"
    if diag.cut:
        return MissClass.CUT, note
    return (MissClass.NO_CALLS if diag.harvested == 0 else MissClass.NO_DIFFERENCE), note

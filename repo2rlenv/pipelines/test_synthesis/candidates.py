"""The candidate record: one broken/fixed pair and everything the gates learned about it.

One schema for every strategy (mutation, commit_pair), written one per line to `candidates.jsonl`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from enum import Enum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from repo2rlenv.pysource.functions import FunctionRecord

# History: 1 = first version. 2 = test_files (the test files a real change touched; issue 33); version-1
# rows read with none. 3 = seconds per stage and the `deferred` status (issue 34); older rows read with none.
CANDIDATE_SCHEMA_VERSION = 3


class SkipReason(str, Enum):
    """Why a candidate did not become a task. Values are the strings counted in summaries."""

    no_change = "no textual change"
    does_not_compile = "mutant does not compile"
    breaks_import = "mutant breaks import"
    import_time = "runs only at import time (no test calls it)"
    killed = "killed by existing tests"
    timeout_on_b = "covering tests time out on B"
    suite_notices_b = "the whole suite notices B"
    no_oracle = "no distinguishing input found"
    oracle_not_perfect = "oracle does not score 1.0"
    duplicate = "duplicate of an earlier candidate"
    over_limit = "limit reached"
    aprime_broken = "no behaviour-preserving rewrite passes the suite"
    validation_failed = "task failed validation"
    # Issue 34: a target whose import needs an extension module the graded runs' native allowlist refuses
    # (gmpy2 imports PyRun_StringFlags): its tasks cannot grade, so it is dropped before any oracle is searched.
    native_refused = "the target's import needs a native module graded runs refuse"
    # A task whose oracle's graded run on A crashed: an environment-level failure that repeats, so the other
    # candidates of its function (of its module, when the run crashed before running any case) are skipped.
    run_crashed = "the graded run on A crashed (validation)"
    after_crash = "an earlier task of this function or module crashed in its graded run"


@dataclass(frozen=True, slots=True)
class Drop:
    """A stage's decision that a candidate does not become a task. Stages return it; the driver records it
    (`Candidate.apply`), so a candidate's record is written in one place, not in every stage."""

    # A `SkipReason`, or the more precise reason an oracle names (`NoOracle`, `LLMNoOracle` values), which
    # candidates.jsonl and the summary count as they are.
    reason: SkipReason | str
    detail: str = ""


class GateResult(BaseModel):
    """One gate's verdict on a candidate."""

    model_config = ConfigDict(extra="forbid")

    gate: str
    passed: bool
    detail: str = ""
    duration_sec: float = 0.0


class BaselineCoverage(BaseModel):
    """Coverage of the touched function by the existing suite on A."""

    model_config = ConfigDict(extra="forbid")

    function_lines: list[int] = Field(description="Executable lines of the function on A.")
    covered_lines: list[int] = Field(description="Those the existing suite executes.")

    @property
    def uncovered(self) -> list[int]:
        covered = set(self.covered_lines)
        return [ln for ln in self.function_lines if ln not in covered]

    @property
    def fraction(self) -> float:
        return len(self.covered_lines) / len(self.function_lines) if self.function_lines else 1.0


class Candidate(BaseModel):
    """A broken (B) / fixed (A) pair touching one function."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = CANDIDATE_SCHEMA_VERSION
    candidate_id: str
    strategy: Literal["mutation", "commit_pair"]
    function: FunctionRecord
    operator: str | None = Field(None, description="Mutation operator (mutation only).")
    mutation_kind: str | None = None
    line: int | None = Field(None, description="Line of the change in A's file.")
    commit: str | None = Field(None, description="The fixing commit (commit_pair only).")
    # In memory only: the journal and candidates.jsonl keep `diff`. Whole files made a more-itertools
    # journal line ~180 KB (its more.py), 111 MB for 768 candidates, and a resumed run spent a minute
    # and 1.3 GB reading it back. Decided candidates never need B's text again.
    files_b: dict[str, str] = Field(default_factory=dict, exclude=True,
                                    description="Path → full text on B, for every file B changes (not serialized).")
    diff: str = Field(description="Unified diff A → B (source files only).")
    # A real change that carries its own tests (issue 33): A is its tree with the parent's tests, so the
    # suite on A is the one that missed the difference, and the change's own tests are a candidate oracle.
    test_files: list[str] = Field(default_factory=list, description="Test files the change touched (commit_pair).")
    tests_a: dict[str, str | None] = Field(
        default_factory=dict, exclude=True,
        description="Test path → the parent's text written over the change's tree to make A (None: the change "
                    "added it, so A has none); not serialized.")
    notes_a: dict[str, str | None] = Field(
        default_factory=dict, exclude=True,
        description="Changelog, news-fragment or documentation path → the parent's text written over the "
                    "change's tree to make A (None: the change added it); not serialized.")
    tests_change: dict[str, str] = Field(
        default_factory=dict, exclude=True,
        description="Test path → the change's own text, for every test file it left in place (the human "
                    "oracle's source); not serialized.")
    # What the change says of itself (issue 33: the audit looks for it in what the agent gets); in memory
    # only, written to the task's tests/change.json.
    change_subject: str | None = Field(None, exclude=True, description="The change's commit subject; not serialized.")
    notes_change: dict[str, str | None] = Field(
        default_factory=dict, exclude=True,
        description="Note path → the change's own text (None: it deleted the file); not serialized.")
    covering_tests: list[str] = Field(default_factory=list, description="Stable tests that run the function.")
    line_tests: list[str] = Field(default_factory=list, description="Stable tests that run the changed line.")
    gates: list[GateResult] = Field(default_factory=list)
    killed: bool | None = Field(None, description="Whether the covering tests notice B.")
    baseline: BaselineCoverage | None = None
    # deferred: the run's time budget could not afford its next stage; undecided, so a rerun tries it again.
    status: Literal["pending", "kept", "dropped", "emitted", "deferred"] = "pending"
    seconds: dict[str, float] = Field(default_factory=dict, description="Wall seconds per stage (gates, oracle, ...).")
    skip_reason: str | None = None
    task_id: str | None = None

    def apply(self, decision: "Drop | GateResult") -> None:
        """Record a stage's decision: a drop ends the candidate, a passed gate joins its record."""
        if isinstance(decision, Drop):
            self.drop(decision.reason, decision.detail)
        else:
            self.gates.append(decision)

    def drop(self, reason: SkipReason | str, detail: str = "") -> None:
        self.status = "dropped"
        self.skip_reason = reason.value if isinstance(reason, SkipReason) else reason
        if detail:
            self.gates.append(GateResult(gate=self.skip_reason, passed=False, detail=detail[:500]))


def candidate_id(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:12]

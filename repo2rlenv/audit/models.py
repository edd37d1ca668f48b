"""audit.json: per task, each check's verdict and what it found; the dataset's duplicates and tables."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from repo2rlenv.dataset.dedup import Merge

# History: 1 = first version; 2 = a check's `common` (hidden text that installed files also hold, not a leak).
AUDIT_SCHEMA_VERSION = 2

Verdict = Literal["ok", "problem", "skipped"]


class Check(BaseModel):
    """One check of one task: its verdict and, for a problem, what was found (a skipped check says why)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    verdict: Verdict
    found: list[str] = Field(default_factory=list)
    common: list[str] = Field(
        default_factory=list,
        description="Lines of B or the oracle that files the task did not bring also hold (a package manifest "
                    "vouches for them, e.g. the stdlib or an installed library): common text, so not a leak.")


class TaskEntry(BaseModel):
    """One task as the audit saw it: what the browser shows and what the checks found."""

    model_config = ConfigDict(extra="forbid")

    task_id: str
    repo: str
    function: str
    strategy: str
    kind: str = Field(description="The mutation operator, or `commit` for a real commit's change.")
    difficulty: str
    oracle_kind: str
    oracle_inputs: str | None
    siblings: int
    coverage_targets: int = Field(description="Baseline-uncovered lines the cov term can measure (0: fully covered).")
    validation: str = Field(description="ok, failed or not validated.")
    checks: list[Check] = Field(default_factory=list)

    @property
    def problems(self) -> list[Check]:
        return [c for c in self.checks if c.verdict == "problem"]


class AuditReport(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: int = AUDIT_SCHEMA_VERSION
    dataset: str
    images_checked: bool = Field(description="Whether the built task images were inspected (Docker).")
    tasks: list[TaskEntry]
    duplicates: list[Merge] = Field(default_factory=list, description="Tasks the dedup rule would merge.")
    stats: dict[str, dict[str, int]] = Field(default_factory=dict, description="Table name → value → tasks.")

    @property
    def problem_count(self) -> int:
        return sum(len(t.problems) for t in self.tasks)

"""The eval's records and totals: one `TaskRecord` per task (journaled as it finishes), `EvalResults` on disk.

A task ends in one of three kinds, kept apart everywhere (results.json, the reports, the CLI):
- a verdict (`graded`): the solver stopped on its own account and the verifier wrote the reward;
- unfinished (`unfinished`): the model could not be used to the end (a call failed for good, the spend
  ceiling, the endpoint gone): its reward says nothing about the solver, so it is not counted, and a
  resumed eval runs it again;
- an error (`error`): the task itself cannot run (its image does not build): final, counted as 0.

Totals, as the report states them:
- solve rate: tasks with reward exactly 1.0, over the finished tasks (verdicts and errors); the
  unfinished are counted beside it;
- mean reward: over the finished tasks, an errored task counting 0;
- mean coverage: the verifier's `cov` (the share of the reference tests' lines of the function the
  submission runs, or on older tasks of the lines the suite leaves uncovered), averaged over the tasks
  that measure it — a task with nothing to measure scores 1 for everyone and would only pull the mean up.

With `tries` > 1 every task is solved that many times (each try its own record, `attempt` 1…N) and
`difficulty` gives each task's solve rate over its finished tries and the label it implies
(`measured_label`), beside the label its task.toml predicted from features (docs/reward.md, "Difficulty").
"""

from __future__ import annotations

from collections import Counter
from enum import StrEnum
from statistics import fmean
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

# results.json and journal line format. 1: first version. 2: unfinished tasks apart (status, totals).
# 3: tries (attempt per record, difficulty per task), mutation_score and coverage_kind in each grade.
RESULTS_SCHEMA_VERSION = 3
# Solver stops that are about the model, not the solver's work: such a task is unfinished.
UNFINISHED_STOPS = frozenset({"model_error", "spend_limit"})


class TaskStatus(StrEnum):
    GRADED = "graded"  # the solver stopped on its own account and the verifier wrote a reward
    UNFINISHED = "unfinished"  # the model could not be used to the end (a failed call, the spend ceiling)
    ERROR = "error"  # the task could not be run (image build, sandbox failure)


class RewardBreakdown(BaseModel):
    """The verifier's reward-details.json, the parts a report shows."""

    model_config = ConfigDict(extra="forbid")

    reward: float | None
    b_pass: float | None = None
    b_fail: float | None = None
    cov: float | None = None
    n_cases: int | None = None
    coverage_targets: int | None = Field(None, description="Lines the cov term measures (0: nothing to gain).")
    coverage_kind: str | None = Field(None, description="oracle, targets or none (reward-details' coverage.kind).")
    mutation_score: float | None = Field(None, description="Siblings killed / siblings.")
    reason: str | None = None

    @classmethod
    def from_details(cls, reward: float | None, details: dict[str, Any]) -> "RewardBreakdown":
        coverage = details.get("coverage") or {}
        targets = coverage.get("targets")
        return cls(reward=reward, b_pass=details.get("b_pass"), b_fail=details.get("b_fail"), cov=details.get("cov"),
                   n_cases=details.get("n_cases"), coverage_targets=len(targets) if isinstance(targets, list) else None,
                   coverage_kind=coverage.get("kind"), mutation_score=details.get("mutation_score"),
                   reason=details.get("reason"))

    @property
    def measures_coverage(self) -> bool:
        return self.coverage_kind == "oracle" or bool(self.coverage_targets)


class TaskRecord(BaseModel):
    """One task's eval."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = RESULTS_SCHEMA_VERSION
    task_id: str
    attempt: int = Field(1, ge=1, description="Which try of the task this is (eval --tries).")
    status: TaskStatus
    error: str | None = None
    grade: RewardBreakdown | None = None
    stop_reason: str | None = None
    stop_detail: str = ""
    rounds: int = 0
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    unpriced_calls: int = 0
    duration_sec: float = 0.0
    test_path: str | None = None
    final_tests: str | None = Field(None, description="The test file the solver left, as graded.")
    last_tests: str | None = Field(None, description="Summary of the solver's last run of its tests.")
    artifacts: dict[str, str] = Field(default_factory=dict, description="Name → path relative to the eval dir.")

    @property
    def run_id(self) -> str:
        """The journal's key and the artifacts' name: the task id, with `@k` for its k-th try after the first."""
        return run_id(self.task_id, self.attempt)

    @property
    def reward(self) -> float:
        return self.grade.reward if self.grade and self.grade.reward is not None else 0.0

    @property
    def solved(self) -> bool:
        return self.reward == 1.0

    @property
    def unfinished(self) -> bool:
        """Not a verdict (a version-1 record says so by its stop reason only)."""
        return self.status is TaskStatus.UNFINISHED or self.stop_reason in UNFINISHED_STOPS

    @property
    def outcome(self) -> str:
        """One word for tables: the solver's stop, `unfinished: <stop>`, or `error`."""
        if self.unfinished:
            return f"unfinished: {self.stop_reason or 'model'}"
        return self.stop_reason or self.status.value


def run_id(task_id: str, attempt: int) -> str:
    return task_id if attempt == 1 else f"{task_id}@{attempt}"


# Measured difficulty from the solve rate over a task's finished tries: (least rate, label), first match.
MEASURED_LABELS: tuple[tuple[float, str], ...] = ((2 / 3, "easy"), (1e-9, "medium"), (0.0, "hard"))


class TaskDifficulty(BaseModel):
    """One task's solve rate over its tries, and what it says about the task."""

    model_config = ConfigDict(extra="forbid")

    task_id: str
    tries: int = Field(description="Finished tries (verdicts and errors).")
    solved: int
    solve_rate: float | None
    measured_label: str | None = Field(description="easy (≥ 2/3 solved), medium (some), hard (none); None "
                                                    "when no try finished.")
    predicted_label: str | None = Field(None, description="task.toml's metadata.difficulty, from features.")


def difficulty(records: list["TaskRecord"], predicted: dict[str, str]) -> list[TaskDifficulty]:
    by_task: dict[str, list[TaskRecord]] = {}
    for record in records:
        by_task.setdefault(record.task_id, []).append(record)
    out = []
    for task_id, runs in by_task.items():
        finished = [r for r in runs if not r.unfinished]
        solved = sum(r.solved for r in finished)
        rate = solved / len(finished) if finished else None
        label = None if rate is None else next(name for least, name in MEASURED_LABELS if rate >= least)
        out.append(TaskDifficulty(task_id=task_id, tries=len(finished), solved=solved, solve_rate=rate,
                                  measured_label=label, predicted_label=predicted.get(task_id)))
    return out


class EvalTotals(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tasks: int = Field(description="Tasks with a record (finished or not).")
    graded: int = Field(description="Tasks with a verdict.")
    errors: int = Field(description="Tasks that could not run.")
    unfinished: int = Field(0, description="Tasks the model could not finish; in no rate or mean.")
    solved: int
    solve_rate: float | None = Field(description="Tasks with reward 1.0 / finished tasks (verdicts and errors).")
    mean_reward: float | None = Field(description="Over finished tasks, an error counting 0.")
    mean_coverage_gain: float | None = Field(description="Mean cov over the tasks that measure coverage.")
    coverage_tasks: int = Field(description="Tasks the coverage mean is over.")
    mean_mutation_score: float | None = Field(None, description="Mean siblings-killed share over the graded "
                                                                "tasks that have siblings.")
    rounds: int
    calls: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    unpriced_calls: int
    stop_reasons: dict[str, int]


class EvalSettings(BaseModel):
    """What an eval run was started with; a resumed run must match it."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = RESULTS_SCHEMA_VERSION
    dataset: str
    solver: dict[str, Any] = Field(description="The SolverConfig, prices and secrets excluded.")
    tasks: list[str]
    tries: int = Field(1, ge=1, description="Solves per task; a resumed eval may raise it.")


class EvalResults(BaseModel):
    """results.json."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = RESULTS_SCHEMA_VERSION
    settings: EvalSettings
    totals: EvalTotals
    tasks: list[TaskRecord]
    not_run: list[str] = Field(default_factory=list, description="Tasks not reached: the spend ceiling, or the "
                               "model gone (see `stopped`).")
    stopped: str | None = Field(None, description="Why the eval stopped before its last task, if it did.")
    difficulty: list[TaskDifficulty] = Field(default_factory=list, description="Per task, over its tries.")


def totals(records: list[TaskRecord]) -> EvalTotals:
    finished = [r for r in records if not r.unfinished]
    n = len(finished)
    graded = [r for r in finished if r.status is TaskStatus.GRADED]
    with_targets = [r.grade.cov for r in graded if r.grade and r.grade.measures_coverage and r.grade.cov is not None]
    scores = [r.grade.mutation_score for r in graded if r.grade and r.grade.mutation_score is not None]
    solved = sum(r.solved for r in finished)
    return EvalTotals(
        tasks=len(records), graded=len(graded), errors=n - len(graded), unfinished=len(records) - n, solved=solved,
        solve_rate=solved / n if n else None, mean_reward=fmean(r.reward for r in finished) if n else None,
        mean_coverage_gain=fmean(with_targets) if with_targets else None, coverage_tasks=len(with_targets),
        mean_mutation_score=fmean(scores) if scores else None,
        rounds=sum(r.rounds for r in records), calls=sum(r.calls for r in records),
        prompt_tokens=sum(r.prompt_tokens for r in records), completion_tokens=sum(r.completion_tokens for r in records),
        cost_usd=sum(r.cost_usd for r in records), unpriced_calls=sum(r.unpriced_calls for r in records),
        stop_reasons=dict(sorted(Counter(r.outcome for r in records).items())))

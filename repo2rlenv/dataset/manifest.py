"""The dataset manifest: `manifest.jsonl`, one row per task, rebuilt from the task trees on disk.

Rows are derived, never edited by hand: each comes from a task's `task.toml` plus its latest validation
record (`validation/<task_id>.json`), so the manifest always describes exactly the tasks present.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from repo2rlenv import atomic
from repo2rlenv.dataset.taskdir import DatasetPaths

# History: 1 = first version. 2 = mutation_weight, siblings, oracle_inputs (version-1 rows read with 0.5, 0, None).
# 3 = verifier_version (older rows, and tasks made before it was recorded, read None).
# 4 = oracle_origin (human, differential or model; older rows read None).
MANIFEST_SCHEMA_VERSION = 4


class ValidationSummary(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ok: bool
    mode: str = Field(description="docker (as Harbor runs it) or local (process-level).")
    oracle_reward: float | None
    empty_reward: float | None
    existing_tests_reward: float | None
    problems: list[str] = Field(default_factory=list)
    content_key: str = Field(description="Hash of the task files that were validated.")


class ManifestRow(BaseModel):
    """One task of a dataset."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = MANIFEST_SCHEMA_VERSION
    task_id: str
    path: str = Field(description="Task dir relative to the dataset root.")
    repo: str
    ref: str | None
    strategy: str
    touched_function: str
    mutation_kind: str | None
    operator: str | None
    commit: str | None
    oracle_kind: str
    oracle_inputs: str | None = Field(None, description="recorded, perturbed, generated, guessed or model.")
    oracle_origin: str | None = Field(None, description="Who wrote the oracle: human, differential or model.")
    reward_mode: str
    coverage_weight: float
    mutation_weight: float = 0.5
    siblings: int = Field(0, description="Hidden sibling mutants graded beside B.")
    baseline_coverage: float
    baseline_full_coverage: bool
    difficulty: str
    content_hash: str
    verifier_version: int | None = Field(
        None, description="The version of the verifier the task ships (None: made before versions were recorded).")
    validation: ValidationSummary | None = None


def validation_path(dataset: DatasetPaths, task_id: str) -> Path:
    return dataset.root / "validation" / f"{task_id}.json"


def save_validation(dataset: DatasetPaths, task_id: str, summary: ValidationSummary) -> None:
    atomic.write_text(validation_path(dataset, task_id), summary.model_dump_json(indent=1))


def load_validation(dataset: DatasetPaths, task_id: str) -> ValidationSummary | None:
    path = validation_path(dataset, task_id)
    return ValidationSummary.model_validate_json(path.read_text()) if path.is_file() else None


def row_for(dataset: DatasetPaths, task_id: str) -> ManifestRow:
    task = dataset.task(task_id)
    meta = task.config().metadata
    r2e = meta.repo2env
    ts = r2e.test_synthesis
    return ManifestRow(
        task_id=task_id, path=task.root.relative_to(dataset.root).as_posix(), repo=r2e.repo, ref=r2e.ref,
        strategy=ts.strategy, touched_function=ts.touched_function, mutation_kind=ts.mutation_kind,
        operator=ts.operator, commit=ts.commit, oracle_kind=ts.oracle_kind,
        oracle_inputs=ts.oracle_inputs, oracle_origin=ts.oracle_origin,
        reward_mode=ts.reward_mode, coverage_weight=ts.coverage_weight,
        mutation_weight=ts.mutation_weight, siblings=ts.siblings,
        baseline_coverage=ts.baseline_coverage, baseline_full_coverage=ts.baseline_full_coverage,
        difficulty=meta.difficulty, content_hash=r2e.content_hash,
        verifier_version=r2e.verifier_version,
        validation=load_validation(dataset, task_id),
    )


def write_manifest(dataset: DatasetPaths) -> list[ManifestRow]:
    rows = [row_for(dataset, task_id) for task_id in dataset.task_ids()]
    atomic.write_lines(dataset.manifest, (r.model_dump_json() for r in rows))
    return rows


def read_manifest(path: Path) -> list[ManifestRow]:
    return [ManifestRow.model_validate_json(line) for line in path.read_text().splitlines() if line.strip()]

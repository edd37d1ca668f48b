"""`repo2rlenv upgrade`: bring the tasks of a dataset up to the verifier this repo2rlenv ships.

Per task, older than `VERIFIER_VERSION` (or recording none):

    copy the task to a staging dir (hard links) ─► re-ship the verifier there (`dataset/reship.py`)
    ─► the task moves aside to `.ID.pre-upgrade`, the staging dir takes its place (two renames)
    ─► validated as `repo2rlenv validate` does (oracle 1.0, empty 0.0, the repo's own tests < 0.5)
    ─► passed: the old copy is removed; failed: it is put back, and the task is reported

A task is only ever whole: its old form, its new one, or (between the two renames) its old form under
the aside name, which a rerun puts back. A run killed while a task was being validated left both forms;
the rerun validates that task again and keeps or restores it. Tasks already at the current version are
skipped, so a killed run, rerun, continues.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any, Callable, Literal

from pydantic import BaseModel, ConfigDict, Field

from repo2rlenv import atomic
from repo2rlenv.dataset.reship import recorded_version, reship_verifier
from repo2rlenv.dataset.taskdir import DatasetPaths, TaskPaths
from repo2rlenv.errors import Repo2RLEnvError, UserError
from repo2rlenv.verifiers.test_synthesis.verifier_version import VERIFIER_VERSION

# The task's previous form while its new one is validated; hidden, so `DatasetPaths.task_ids` skips it.
ASIDE_SUFFIX = ".pre-upgrade"

Action = Literal["upgraded", "current", "newer", "restored", "failed"]
Validation = Literal["ok", "failed", "skipped", "not run"]


class TaskUpgrade(BaseModel):
    """What upgrading one task did."""

    model_config = ConfigDict(extra="forbid")

    task_id: str
    old_version: int | None = Field(description="The verifier version the task had (None: none recorded).")
    new_version: int | None = Field(description="The version it has now (the old one when nothing changed).")
    action: Action = Field(description="upgraded; current (already at this version); newer (ships a later "
                                       "verifier than this repo2rlenv, left alone); restored (failed validation, "
                                       "its previous form put back); failed (could not be upgraded).")
    validation: Validation
    problems: list[str] = Field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.action in ("upgraded", "current", "newer")


def aside_path(tasks: Path, task_id: str) -> Path:
    return tasks / f".{task_id}{ASIDE_SUFFIX}"


def pending_ids(dataset: DatasetPaths) -> list[str]:
    """Every task id of the dataset, with those a killed run left set aside (even if missing now)."""
    ids = set(dataset.task_ids())
    if dataset.tasks.is_dir():
        ids |= {p.name[1:-len(ASIDE_SUFFIX)] for p in dataset.tasks.glob(f".*{ASIDE_SUFFIX}") if p.is_dir()}
    return sorted(ids)


class Upgrader:
    """Upgrades the tasks of one dataset, one at a time (`upgrade_dataset` runs it over all of them)."""

    def __init__(self, root: Path, *, validate: bool = True, client: Any = None):
        self.dataset = DatasetPaths(root)
        self.validate = validate
        self._client = client

    def upgrade(self, task_id: str) -> TaskUpgrade:
        live, aside = self.dataset.task(task_id).root, aside_path(self.dataset.tasks, task_id)
        if aside.is_dir():
            if not live.is_dir():
                os.replace(aside, live)  # killed between the two renames: the old form goes back
            else:  # killed while validating the new form: validate it again
                return self._settle(task_id, previous=_version_or_none(TaskPaths(aside)))
        task = TaskPaths(live)
        try:
            old = recorded_version(task)
        except UserError as exc:
            return TaskUpgrade(task_id=task_id, old_version=None, new_version=None, action="failed",
                               validation="not run", problems=[str(exc)])
        if old is not None and old >= VERIFIER_VERSION:
            return TaskUpgrade(task_id=task_id, old_version=old, new_version=old,
                               action="current" if old == VERIFIER_VERSION else "newer", validation="not run")
        for debris in self.dataset.tasks.glob(f".{task_id}.partial-*"):
            shutil.rmtree(debris, ignore_errors=True)
        staging = atomic.staging_dir(self.dataset.tasks, task_id)
        try:
            shutil.copytree(live, staging, symlinks=True, dirs_exist_ok=True, copy_function=_link_or_copy)
            reship_verifier(TaskPaths(staging), VERIFIER_VERSION)
        except (OSError, Repo2RLEnvError) as exc:
            shutil.rmtree(staging, ignore_errors=True)
            return TaskUpgrade(task_id=task_id, old_version=old, new_version=old, action="failed",
                               validation="not run", problems=[f"re-shipping the verifier failed: {exc}"])
        os.replace(live, aside)
        os.replace(staging, live)
        return self._settle(task_id, previous=old)

    def _settle(self, task_id: str, previous: int | None) -> TaskUpgrade:
        """The new form is in place and the old one aside: validate, then keep one of them."""
        live, aside = self.dataset.task(task_id).root, aside_path(self.dataset.tasks, task_id)
        if not self.validate:
            atomic.remove_dir(aside)
            return TaskUpgrade(task_id=task_id, old_version=previous, new_version=VERIFIER_VERSION,
                               action="upgraded", validation="skipped")
        problems = self._validate(TaskPaths(live))
        if not problems:
            atomic.remove_dir(aside)
            return TaskUpgrade(task_id=task_id, old_version=previous, new_version=VERIFIER_VERSION,
                               action="upgraded", validation="ok")
        atomic.remove_dir(live)  # renamed away first: the task is briefly missing, never half of one
        os.replace(aside, live)
        return TaskUpgrade(task_id=task_id, old_version=previous, new_version=previous, action="restored",
                           validation="failed", problems=problems)

    def _validate(self, task: TaskPaths) -> list[str]:
        """The problems validating `task` found (none: it passed); its record saved when it passed."""
        from repo2rlenv.dataset.manifest import save_validation
        from repo2rlenv.validate import summarize, validate_task

        if self._client is None:
            from repo2rlenv.sandbox.docker import docker_client

            self._client = docker_client()
        try:
            result = validate_task(task, client=self._client)
        except Exception as exc:  # a build or sandbox failure, or the daemon gone: the old form goes back
            return [f"validation could not run: {str(exc) or type(exc).__name__}"]
        if result.ok:
            save_validation(self.dataset, task.root.name, summarize(result, mode="docker", task=task))
        return result.problems


def upgrade_dataset(root: Path, *, validate: bool = True, client: Any = None,
                    progress: Callable[[str], None] | None = None) -> list[TaskUpgrade]:
    """Upgrade every task of the dataset at `root`; rewrites the manifest when any task changed."""
    dataset = DatasetPaths(root)
    if not dataset.tasks.is_dir() or not pending_ids(dataset):
        raise UserError(f"not a repo2rlenv dataset (no tasks/ with tasks): {root}")
    upgrader = Upgrader(root, validate=validate, client=client)
    results = []
    for task_id in pending_ids(dataset):
        result = upgrader.upgrade(task_id)
        results.append(result)
        if progress:
            progress(f"{task_id}: {describe(result)}")
    if any(r.action in ("upgraded", "restored") for r in results):
        from repo2rlenv.dataset.manifest import write_manifest

        write_manifest(dataset)
    return results


def describe(result: TaskUpgrade) -> str:
    versions = f"{_version(result.old_version)} → {_version(result.new_version)}"
    if result.action == "upgraded":
        return f"upgraded {versions} (validation {result.validation})"
    if result.action == "current":
        return f"already at version {result.new_version}"
    if result.action == "newer":
        return f"ships verifier {result.old_version}, newer than this repo2rlenv's {VERIFIER_VERSION}: left alone"
    if result.action == "restored":
        return "failed validation with the new verifier, restored: " + "; ".join(result.problems)
    return "FAILED: " + "; ".join(result.problems)


def _version_or_none(task: TaskPaths) -> int | None:
    try:
        return recorded_version(task)
    except UserError:
        return None


def _version(version: int | None) -> str:
    return "none" if version is None else str(version)


def _link_or_copy(src: str, dst: str) -> str:
    """A hard link where the filesystem allows one (the copy is in the same dir), else a copy."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)
    return dst

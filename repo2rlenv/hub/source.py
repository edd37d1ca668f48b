"""Read a dataset directory written by `repo2rlenv generate`: its tasks, manifest rows and validation state.

Everything `export` and `push` need is checked here first, so a directory that is not a dataset, or a
task tree that the Hub cannot hold (a symbolic link), fails with one line before anything is written.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from pydantic import ValidationError

from repo2rlenv.hub.errors import NotADataset, UnvalidatedTasks
from repo2rlenv.dataset.manifest import ManifestRow, row_for
from repo2rlenv.dataset.task_toml import TaskToml
from repo2rlenv.dataset.taskdir import DatasetPaths, TaskPaths


class ValidationStatus(str, Enum):
    """Where a task stands with respect to `repo2rlenv validate`."""

    PASSED = "passed"
    FAILED = "failed"
    STALE = "stale"  # validated, but its files changed since: the result no longer describes it
    MISSING = "missing"


@dataclass(frozen=True, slots=True)
class LocalTask:
    """One task of a local dataset, with what publishing needs to know about it."""

    row: ManifestRow
    config: TaskToml
    paths: TaskPaths
    status: ValidationStatus

    @property
    def task_id(self) -> str:
        return self.row.task_id


@dataclass(frozen=True, slots=True)
class LocalDataset:
    """A dataset directory, opened and checked."""

    paths: DatasetPaths
    tasks: tuple[LocalTask, ...]

    def unvalidated(self) -> list[LocalTask]:
        return [t for t in self.tasks if t.status is not ValidationStatus.PASSED]

    def require_validated(self) -> None:
        """Refuse a dataset with any task that did not pass validation as it is now."""
        bad = self.unvalidated()
        if not bad:
            return
        by_status: dict[ValidationStatus, list[str]] = {}
        for task in bad:
            by_status.setdefault(task.status, []).append(task.task_id)
        words = {ValidationStatus.FAILED: "failed validation", ValidationStatus.STALE: "changed since validation",
                 ValidationStatus.MISSING: "never validated"}
        parts = [f"{len(ids)} {words[status]} ({short_list(ids)})"
                 for status, ids in sorted(by_status.items(), key=lambda kv: kv[0].value)]
        raise UnvalidatedTasks(f"{len(bad)} of {len(self.tasks)} tasks did not pass validation: {'; '.join(parts)}; "
                               "run `repo2rlenv validate` on the dataset or pass --include-unvalidated")


def short_list(items: list[str], limit: int = 3) -> str:
    """The first few items, comma-separated, with how many more there are: for one-line messages."""
    return ", ".join(items[:limit]) + (f", … ({len(items) - limit} more)" if len(items) > limit else "")


def open_dataset(root: Path) -> LocalDataset:
    """Open `root` as a repo2rlenv dataset, or raise `NotADataset` saying why it is not one."""
    paths = DatasetPaths(root)
    if not root.is_dir():
        raise NotADataset(f"not a repo2rlenv dataset: {root} is not a directory")
    task_ids = paths.task_ids()
    if not task_ids:
        raise NotADataset(f"not a repo2rlenv dataset: {root} has no tasks/<task_id>/ directories")
    tasks = tuple(_open_task(paths, task_id) for task_id in task_ids)
    for task in tasks:
        _refuse_links(paths.root, task.paths.root)
    return LocalDataset(paths=paths, tasks=tasks)


def _open_task(dataset: DatasetPaths, task_id: str) -> LocalTask:
    from repo2rlenv.validate import content_key

    task = dataset.task(task_id)
    where = f"{dataset.root} (tasks/{task_id}/task.toml"
    if not task.task_toml.is_file():
        raise NotADataset(f"not a repo2rlenv dataset: {where} is missing)")
    try:
        config = TaskToml.from_toml(task.task_toml.read_text())
        row = row_for(dataset, task_id)
    except (tomllib.TOMLDecodeError, ValidationError, KeyError, UnicodeDecodeError) as exc:
        reason = str(exc).splitlines()[0]
        raise NotADataset(f"not a repo2rlenv dataset: {where} is not a repo2rlenv task: {reason})") from exc
    if row.validation is None:
        status = ValidationStatus.MISSING
    elif row.validation.content_key != content_key(task):
        status = ValidationStatus.STALE
    else:
        status = ValidationStatus.PASSED if row.validation.ok else ValidationStatus.FAILED
    return LocalTask(row=row, config=config, paths=task, status=status)


def _refuse_links(root: Path, task_root: Path) -> None:
    # The Hub stores regular files only: a link would be uploaded as its target's bytes (or, pointing
    # outside the dataset, publish a file of this machine), and a pull could never restore it.
    for path in task_root.rglob("*"):
        if path.is_symlink():
            rel = path.relative_to(root).as_posix()
            raise NotADataset(f"{rel} is a symbolic link; a published dataset holds regular files only")

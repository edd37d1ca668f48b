"""The driver's writes into the dataset: a finished run's tasks published into tasks/, a Ray worker's run
folder unpacked into runs/, debris of killed runs swept. Every write is a rename of something complete,
so a driver killed at any point leaves either the old or the new state, never half of one."""

from __future__ import annotations

import io
import os
import shutil
import tarfile
from pathlib import Path

from repo2rlenv import atomic
from repo2rlenv.dataset.manifest import validation_path
from repo2rlenv.dataset.taskdir import DatasetPaths

RUNS_DIR = "runs"


def run_dir(dataset: DatasetPaths, name: str) -> Path:
    return dataset.root / RUNS_DIR / name


def _link_tree(src: Path, dest: Path) -> None:
    """`dest` as a copy of `src` made of hard links (no extra space; task files are never edited in place,
    only replaced), or of real copies where the filesystem has no links."""
    def link(s: str, d: str) -> None:
        try:
            os.link(s, d)
        except OSError:
            shutil.copy2(s, d)

    shutil.copytree(src, dest, symlinks=True, copy_function=link, dirs_exist_ok=True)


def publish_tasks(dataset: DatasetPaths, run: Path, task_ids: list[str]) -> list[str]:
    """Publish the run's tasks `task_ids` (and their validation records) into the dataset; the ids done.

    Idempotent: a task already published is replaced by the same files."""
    source = DatasetPaths(run)
    done = []
    for task_id in task_ids:
        src = source.task(task_id).root
        if not src.is_dir():
            continue
        staging = atomic.staging_dir(dataset.tasks, task_id)
        _link_tree(src, staging)
        atomic.publish_dir(staging, dataset.task(task_id).root)
        record = validation_path(source, task_id)
        if record.is_file():
            atomic.write_text(validation_path(dataset, task_id), record.read_text())
        done.append(task_id)
    return done


def pack_run(run: Path) -> bytes:
    """A run folder as a tar (what a Ray worker sends back to the driver)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=1) as tar:
        tar.add(run, arcname=".")
    return buf.getvalue()


def unpack_run(data: bytes, run: Path) -> None:
    """Replace `run` with the run folder packed in `data`, atomically."""
    staging = atomic.staging_dir(run.parent, run.name)
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            tar.extractall(staging, filter="data")
        atomic.publish_dir(staging, run)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise

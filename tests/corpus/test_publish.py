"""The driver's writes: tasks published as links of the run's files, run folders unpacked whole, debris swept."""

from __future__ import annotations

import os

from repo2rlenv import atomic
from repo2rlenv.corpus.publish import pack_run, publish_tasks, run_dir, unpack_run
from repo2rlenv.dataset.manifest import (
    ValidationSummary,
    save_validation,
    validation_path,
)
from repo2rlenv.dataset.taskdir import DatasetPaths


def _run_with_task(root, name="repo-1", task_id="repo-ts-1"):
    run = run_dir(DatasetPaths(root), name)
    task = DatasetPaths(run).task(task_id)
    (task.tests).mkdir(parents=True)
    task.task_toml.write_text("schema_version = '1.4'\n")
    (task.tests / "test.sh").write_text("#!/bin/sh\n")
    os.symlink("test.sh", task.tests / "link.sh")
    save_validation(DatasetPaths(run), task_id, ValidationSummary(ok=True, mode="docker", oracle_reward=1.0,
                                                                   empty_reward=0.0, existing_tests_reward=0.0,
                                                                   content_key="k"))
    return run, task


def test_published_tasks_are_links_of_the_runs_files_and_republishing_is_harmless(tmp_path):
    dataset = DatasetPaths(tmp_path)
    run, task = _run_with_task(tmp_path)
    assert publish_tasks(dataset, run, ["repo-ts-1", "repo-ts-missing"]) == ["repo-ts-1"]
    published = dataset.task("repo-ts-1")
    assert published.task_toml.read_text() == "schema_version = '1.4'\n"
    assert os.stat(published.task_toml).st_ino == os.stat(task.task_toml).st_ino  # no second copy on disk
    assert os.readlink(published.tests / "link.sh") == "test.sh"
    assert validation_path(dataset, "repo-ts-1").read_text() == validation_path(DatasetPaths(run), "repo-ts-1").read_text()
    assert publish_tasks(dataset, run, ["repo-ts-1"]) == ["repo-ts-1"]
    assert dataset.task_ids() == ["repo-ts-1"]
    assert not list(dataset.tasks.glob(".*"))  # no staging left


def test_a_packed_run_folder_replaces_the_old_one_whole(tmp_path):
    run, _ = _run_with_task(tmp_path / "node")
    data = pack_run(run)
    target = tmp_path / "dataset" / "runs" / "repo-1"
    target.mkdir(parents=True)
    (target / "stale.txt").write_text("from an older attempt")
    unpack_run(data, target)
    assert not (target / "stale.txt").exists()
    assert DatasetPaths(target).task_ids() == ["repo-ts-1"]
    assert [p.name for p in target.parent.iterdir()] == ["repo-1"]


def test_sweeping_removes_staging_dirs_only(tmp_path):
    (tmp_path / "tasks" / ".t1.partial-abc").mkdir(parents=True)
    (tmp_path / "runs" / "r" / "tasks" / ".t2.partial-xyz").mkdir(parents=True)
    (tmp_path / "tasks" / "t3").mkdir()
    assert atomic.sweep_staging(tmp_path) == 2
    assert [p.name for p in (tmp_path / "tasks").iterdir()] == ["t3"]

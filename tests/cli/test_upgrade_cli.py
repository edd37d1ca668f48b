"""`repo2rlenv upgrade` as a user runs it, on real task dirs with real re-validation (Docker): an old task is
brought up to the current verifier and validated, one that fails validation is put back as it was, a
killed run continues when rerun, a rerun changes nothing, and bad input is one line and exit 2."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from repo2rlenv.dataset.manifest import load_validation, read_manifest
from repo2rlenv.dataset.reship import recorded_version, reship_verifier
from repo2rlenv.dataset.taskdir import DatasetPaths, TaskPaths
from repo2rlenv.upgrade import aside_path
from repo2rlenv.validate import content_key
from repo2rlenv.verifiers.bundle import VERIFIER_DIR, VERIFIER_MODULES
from repo2rlenv.verifiers.test_synthesis.verifier_version import VERIFIER_VERSION

pytestmark = pytest.mark.slow
WEAK = "def test_nothing():\n    assert True\n"


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "repo2rlenv", *args], capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "200"}, timeout=1800)


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _hidden(data: DatasetPaths) -> list[str]:
    return sorted(p.name for p in data.tasks.iterdir() if p.name.startswith("."))


@pytest.fixture
def old_dataset(scored_dataset, tmp_path, age_task) -> tuple[DatasetPaths, str, str]:
    """A copy of the scored dataset whose first task an older repo2rlenv made; (dataset, old id, current id)."""
    shutil.copytree(scored_dataset, tmp_path / "ds", symlinks=True)
    data = DatasetPaths(tmp_path / "ds")
    old, current = data.task_ids()[:2]
    age_task(data.task(old).root)
    return data, old, current


def _by_task(res: subprocess.CompletedProcess) -> dict[str, dict]:
    return {row["task_id"]: row for row in json.loads(res.stdout)}


def test_an_old_task_is_upgraded_revalidated_and_a_rerun_changes_nothing(old_dataset):
    data, old, current = old_dataset
    task = data.task(old)
    graded = {k: v for k, v in _files(task.root).items()
              if not (k.startswith("tests/verifier") and k.endswith(".py")) and k not in ("tests/test.sh", "task.toml")}
    current_files = _files(data.task(current).root)

    res = cli("upgrade", str(data.root), "--json")
    assert res.returncode == 0, res.stderr
    rows = _by_task(res)
    assert rows[old] == {"task_id": old, "old_version": None, "new_version": VERIFIER_VERSION,
                         "action": "upgraded", "validation": "ok", "problems": []}
    assert rows[current]["action"] == "current" and rows[current]["validation"] == "not run"

    assert sorted(p.name for p in task.tests.glob("verifier*.py")) == sorted(VERIFIER_MODULES)
    assert all((task.tests / n).read_bytes() == (VERIFIER_DIR / n).read_bytes() for n in VERIFIER_MODULES)
    assert recorded_version(task) == VERIFIER_VERSION
    after = _files(task.root)
    assert {k: after[k] for k in graded} == graded, "verifier_config, diffs, oracle, environment untouched"
    assert _files(data.task(current).root) == current_files, "a current task is not touched"
    assert _hidden(data) == []
    record = load_validation(data, old)
    assert record is not None and record.ok and record.content_key == content_key(task)
    assert {r.task_id: r.verifier_version for r in read_manifest(data.manifest)} == \
        {old: VERIFIER_VERSION, current: VERIFIER_VERSION}

    everything = _files(data.root)
    again = cli("upgrade", str(data.root))
    assert again.returncode == 0, again.stderr
    assert "old version" in again.stderr and again.stderr.count("already at version") == 2
    assert _files(data.root) == everything


def test_a_task_failing_revalidation_is_restored_and_reported(old_dataset):
    data, old, current = old_dataset
    task = data.task(old)
    test_path = tomllib.loads(task.task_toml.read_text())["metadata"]["repo2env"]["test_synthesis"]["test_path"]
    # The reference solution now writes tests that catch nothing: no verifier gives them 1.0.
    task.solve_sh.write_text(f"#!/bin/bash\ncat > /workspace/{test_path} <<'EOF'\n{WEAK}EOF\n")
    before = _files(task.root)

    res = cli("upgrade", str(data.root), "--json")
    assert res.returncode == 1, res.stderr
    row = _by_task(res)[old]
    assert row["action"] == "restored" and row["validation"] == "failed"
    assert row["old_version"] is None and row["new_version"] is None
    assert any("oracle scored" in p for p in row["problems"]), row
    assert _files(task.root) == before, "the task is exactly as it was"
    assert _hidden(data) == []
    assert _by_task(res)[current]["action"] == "current"


def test_a_run_killed_between_the_renames_continues(old_dataset):
    data, old, _ = old_dataset
    aside = aside_path(data.tasks, old)
    os.replace(data.task(old).root, aside)  # killed after the task was moved aside, before the new one came
    assert old not in data.task_ids()

    res = cli("upgrade", str(data.root), "--no-validate", "--json")
    assert res.returncode == 0, res.stderr
    assert _by_task(res)[old] == {"task_id": old, "old_version": None, "new_version": VERIFIER_VERSION,
                                  "action": "upgraded", "validation": "skipped", "problems": []}
    assert recorded_version(data.task(old)) == VERIFIER_VERSION and _hidden(data) == []


def test_a_run_killed_while_validating_validates_again_and_keeps_the_new_form(old_dataset):
    data, old, _ = old_dataset
    live = data.task(old).root
    aside = aside_path(data.tasks, old)
    shutil.copytree(live, aside, symlinks=True)
    reship_verifier(TaskPaths(live), VERIFIER_VERSION)  # the new form was in place when the run was killed
    new_form = _files(live)

    res = cli("upgrade", str(data.root), "--json")
    assert res.returncode == 0, res.stderr
    assert _by_task(res)[old] == {"task_id": old, "old_version": None, "new_version": VERIFIER_VERSION,
                                  "action": "upgraded", "validation": "ok", "problems": []}
    assert _files(live) == new_form and _hidden(data) == []
    assert load_validation(data, old).content_key == content_key(data.task(old))


@pytest.mark.parametrize("flags", [[], ["--no-validate"]])
def test_bad_input_is_one_line_and_exit_2(tmp_path, flags):
    (tmp_path / "empty" / "tasks").mkdir(parents=True)
    for target in (tmp_path / "missing", tmp_path / "empty"):
        res = cli("upgrade", str(target), *flags)
        assert res.returncode == 2, (res.stdout, res.stderr)
        lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
        assert lines == [f"error: not a repo2rlenv dataset (no tasks/ with tasks): {target}"], res.stderr
        assert res.stdout == ""


def test_upgrade_help():
    res = cli("upgrade", "--help")
    assert res.returncode == 0 and "--no-validate" in res.stdout


def test_task_toml_of_an_upgraded_task_keeps_its_other_keys(old_dataset):
    data, old, _ = old_dataset
    before = tomllib.loads(data.task(old).task_toml.read_text())
    res = cli("upgrade", str(data.root), "--no-validate")
    assert res.returncode == 0, res.stderr
    after = tomllib.loads(data.task(old).task_toml.read_text())
    assert after["metadata"]["repo2env"].pop("verifier_version") == VERIFIER_VERSION
    assert after == before


def test_a_newer_task_is_left_alone_and_an_unreadable_one_fails(old_dataset):
    data, old, current = old_dataset
    newer = data.task(current).task_toml
    newer.write_text(newer.read_text().replace(f"verifier_version = {VERIFIER_VERSION}",
                                               f"verifier_version = {VERIFIER_VERSION + 1}"))
    data.task(old).task_toml.write_text("[metadata\n")
    everything = _files(data.root)

    res = cli("upgrade", str(data.root), "--no-validate", "--json")
    assert res.returncode == 1, res.stderr
    rows = _by_task(res)
    assert rows[current]["action"] == "newer" and rows[current]["old_version"] == VERIFIER_VERSION + 1
    assert rows[old]["action"] == "failed" and "task.toml does not read" in rows[old]["problems"][0]
    assert _files(data.root) == everything

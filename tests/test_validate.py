"""`repo2rlenv validate` for real (Docker): shared-form tasks, a broken task caught, bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from repo2rlenv.config import GenerateConfig
from repo2rlenv.generate import run_generate
from repo2rlenv.dataset.manifest import read_manifest
from repo2rlenv.progress import Reporter
from repo2rlenv.dataset.taskdir import DatasetPaths


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "repo2rlenv", *args], capture_output=True, text=True,
                          env=dict(os.environ), timeout=900)


@pytest.mark.slow
def test_shared_form_validates_and_a_broken_oracle_fails(example_repo, tmp_path, docker_ready, r2e_cache):
    out = tmp_path / "ds"
    config = GenerateConfig(repo=str(example_repo), out=out, sandbox="docker", cache_dir=r2e_cache,
                            pipeline_opts={"strategy": "mutation", "limit": 1, "seed": 3,
                                           "harbor_verifier": "shared", "validate_tasks": False})
    result = run_generate(config, Reporter(quiet=True))
    assert len(result.emitted) == 1
    res = cli("validate", str(out), "--json")
    assert res.returncode == 0, res.stderr
    (entry,) = json.loads(res.stdout)
    assert entry["ok"] and entry["oracle"]["reward"] == 1.0 and entry["empty"]["reward"] == 0.0
    (row,) = read_manifest(DatasetPaths(out).manifest)
    assert row.validation is not None and row.validation.ok

    # Unchanged tasks that passed are skipped on the next run.
    assert json.loads(cli("validate", str(out), "--json").stdout) == []

    # An oracle that asserts nothing must be caught: exit 1 and the reason recorded.
    task = DatasetPaths(out).task(result.emitted[0])
    oracle = next(task.solution.glob("test_r2e_*.py"))
    weak = "def test_nothing():\n    assert True\n"
    oracle.write_text(weak)
    solve = task.solve_sh.read_text()
    start, end = solve.index("<<'R2E_ORACLE_EOF'\n") + len("<<'R2E_ORACLE_EOF'\n"), solve.index("R2E_ORACLE_EOF\n", solve.index("<<'R2E_ORACLE_EOF'\n") + 20)
    task.solve_sh.write_text(solve[:start] + weak + solve[end:])
    res = cli("validate", str(out), "--json")
    assert res.returncode == 1
    (entry,) = json.loads(res.stdout)
    assert not entry["ok"] and entry["oracle"]["reward"] == 0.0
    assert any("oracle scored 0.0" in p for p in entry["problems"])


def test_validate_rejects_a_directory_that_is_not_a_dataset(tmp_path):
    res = cli("validate", str(tmp_path))
    assert res.returncode == 2
    assert res.stderr.strip().startswith("error: not a repo2rlenv dataset")

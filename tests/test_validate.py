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


# The output tail of jsonpickle's runs on A (issue 34), as the verifier recorded it.
_PLUGIN_CRASH = '''Error while loading plugin "jaraco.vcs.fixtures".
/opt/venv/lib/python3.11/site-packages/jaraco/path.py:18: in <module>
    import ctypes
/usr/lib/python3.11/ctypes/__init__.py:8: in <module>
    from _ctypes import Union, Structure, Array
E   ImportError: /usr/lib/python3.11/lib-dynload/_ctypes.cpython-311-x86_64-linux-gnu.so: failed to map segment from shared object
'''


def _validation(status: str, tail: str, n_cases: int = 0):
    from repo2rlenv.validate import RunOutcome, ValidationResult

    details = {"reason": "the run on A did not finish (crashed)",
               "variants": [{"name": "A", "status": status, "n_cases": n_cases, "output_tail": tail}]}
    return ValidationResult(task_id="t", ok=False, oracle=RunOutcome(reward=0.0, details=details),
                            empty=RunOutcome(reward=0.0))


def test_a_crash_on_a_is_told_in_one_line_naming_its_cause():
    line, before_cases = _validation("crashed", _PLUGIN_CRASH).a_crash()
    assert line.startswith('Error while loading plugin "jaraco.vcs.fixtures".: ImportError: ')
    assert "failed to map segment" in line and line.endswith("(a native module the graded runs' allowlist refuses, verifier_native)")
    assert before_cases
    assert _validation("crashed", "..\nFatal Python error: Segmentation fault\n", n_cases=3).a_crash() == (
        "Fatal Python error: Segmentation fault", False)
    assert _validation("ok", _PLUGIN_CRASH).a_crash() is None


@pytest.mark.slow
def test_a_task_image_built_on_an_older_base_is_rebuilt(tmp_path, docker_ready):
    # dev_setup rebuilds a base image when the kernel extension's source changes: a task image cached from
    # the older base would carry the old extension into every grading.
    from repo2rlenv.dataset.taskdir import TaskPaths
    from repo2rlenv.sandbox.docker import docker_client
    from repo2rlenv.validate import BASE_LABEL, build_task_image

    client = docker_client()
    base_tag = f"r2e-test-base:{os.getpid()}"
    base_dir, task_root = tmp_path / "base", tmp_path / "r2e-base-label-task"
    base_dir.mkdir()
    (task_root / "environment").mkdir(parents=True)
    (task_root / "environment" / "Dockerfile").write_text(f"FROM {base_tag}\nLABEL r2e.test=task\n")
    task = TaskPaths(task_root)
    made = []
    try:
        bases = []
        for version in ("1", "2"):
            (base_dir / "Dockerfile").write_text(f"FROM repo2rlenv-base:bookworm\nLABEL r2e.test.base={version}\n")
            bases.append(client.images.build(path=str(base_dir), tag=base_tag, rm=True)[0].id)
            first = client.images.get(build_task_image(client, task))
            again = client.images.get(build_task_image(client, task))
            made.append(first.id)
            assert first.labels[BASE_LABEL] == bases[-1] and again.id == first.id  # cached while the base stays
        assert made[0] != made[1]  # the base changed: the task image was built again, on it
    finally:
        for ref in (*made, base_tag):
            try:
                client.images.remove(ref, force=True)
            except Exception:
                pass

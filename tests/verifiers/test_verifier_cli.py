"""The verifier as shipped in a task: standalone modules, the CLI as a subprocess, and test.sh's fallbacks."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from repo2rlenv.verifiers.bundle import TEST_SH, VERIFIER_DIR, VERIFIER_MODULES, install_verifier

pytestmark = pytest.mark.slow
SIBLINGS = {Path(name).stem for name in VERIFIER_MODULES}


@pytest.mark.parametrize("name", VERIFIER_MODULES)
def test_shipped_modules_need_only_stdlib_pytest_and_coverage(name):
    # _pytest: pytest's own; _r2e_kernel: the base images' kernel extension (optional: ctypes without it)
    allowed = set(sys.stdlib_module_names) | {"pytest", "_pytest", "coverage", "_r2e_kernel"} | SIBLINGS
    tree = ast.parse((VERIFIER_DIR / name).read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            tops = {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # `from . import sibling` or `from .sibling import name`
                tops = {node.module} if node.module else {alias.name for alias in node.names}
            else:
                tops = {(node.module or "").split(".")[0]}
        else:
            continue
        assert tops <= allowed, f"{name}:{node.lineno} imports {tops - allowed}"


def test_install_verifier_writes_a_flat_tests_dir(tmp_path):
    written = install_verifier(tmp_path)
    assert sorted(p.name for p in written) == sorted(["test.sh", *VERIFIER_MODULES])
    assert os.access(tmp_path / "test.sh", os.X_OK)


def test_cli_runs_from_a_flat_tests_dir(make_task, kit, portable_python, tmp_path):
    task = make_task(kit.GOOD_TEST)
    scratch_parent = tmp_path / "tmp"
    scratch_parent.mkdir(mode=0o755)
    done = subprocess.run(
        [sys.executable, "-E", "-s", "-B", str(task.tests_dir / "verifier.py"),
         "--config", str(task.tests_dir / "verifier_config.json"), "--workspace", str(task.workspace),
         "--logs", str(task.logs_dir), "--python", portable_python],
        cwd="/", env={"PATH": os.environ["PATH"], "TMPDIR": str(scratch_parent)}, capture_output=True, text=True,
        timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "reward 1.0\n"
    assert task.reward_text() == "1.0\n"
    assert not (task.tests_dir / "__pycache__").exists()
    # The scratch dir (copies of A, A′ and B) is removed by a detached process once the reward is out.
    deadline = time.monotonic() + 30
    while list(scratch_parent.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert list(scratch_parent.iterdir()) == []


@pytest.mark.parametrize("argv", [[], ["--config", "c.json", "--workspace", "w"],
                                  ["--config", "c.json", "--workspace", "w", "--logs", "l", "--surprise", "x"],
                                  ["--config", "c.json", "--workspace", "w", "--logs"]])
def test_cli_rejects_bad_arguments_with_usage(tmp_path, argv):
    install_verifier(tmp_path)
    done = subprocess.run([sys.executable, "-E", "-s", "-B", str(tmp_path / "verifier.py"), *argv], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.startswith("usage: verifier.py")
    assert not (tmp_path / "l").exists()


def test_cli_module_reaches_the_grading_names():
    from repo2rlenv.verifiers.test_synthesis import verifier, verifier_grade

    assert verifier.read_config is verifier_grade.read_config and verifier.publish is verifier_grade.publish
    with pytest.raises(AttributeError):
        verifier.no_such_name  # noqa: B018


def _local_test_sh(task, python: str) -> Path:
    # test.sh hard-codes Harbor's paths; point them at the task's dirs (and the interpreter) instead.
    text = TEST_SH.read_text()
    # Without --strays: on a host, test.sh must not stop the host's processes (the verifier also refuses
    # outside /tests); the reaper is tested in a container, tests/scoring/test_shared_mode.py).
    for old, new in (("\\\n  --strays kill", ""), ("/logs/verifier", str(task.logs_dir)), ("/tests/", f"{task.tests_dir}/"),
                     ("--workspace /workspace", f"--workspace {task.workspace}"), ("/opt/venv/bin/python", python)):
        assert old in text
        text = text.replace(old, new)
    path = task.tests_dir / "test_local.sh"
    path.write_text(text)
    return path


def test_test_sh_runs_the_verifier(make_task, kit):
    task = make_task(kit.GOOD_TEST)
    done = subprocess.run(["bash", str(_local_test_sh(task, sys.executable))], capture_output=True, text=True,
                          env={"PATH": os.environ["PATH"]}, timeout=300)
    assert done.stdout == "reward 1.0\n", done.stderr
    assert task.reward_text() == "1.0\n"


def test_test_sh_writes_zero_when_the_verifier_dies(make_task, kit):
    task = make_task(kit.GOOD_TEST)
    # A verifier killed after a test planted a reward file: the planted 1.0 must not survive.
    (task.tests_dir / "verifier.py").write_text(
        "import os, sys\nlogs = sys.argv[sys.argv.index('--logs') + 1]\n"
        "open(os.path.join(logs, 'reward.txt'), 'w').write('1.0\\n')\n"
        "open(os.path.join(logs, 'reward.json'), 'w').write('{\"reward\": 1}')\nos._exit(3)\n")
    subprocess.run(["bash", str(_local_test_sh(task, sys.executable))], capture_output=True, timeout=300)
    assert task.reward_text() == "0\n"
    assert not (task.logs_dir / "reward.json").exists()


def test_test_sh_falls_back_to_python3(make_task, kit):
    task = make_task("def test_nothing():\n    pass\n")
    subprocess.run(["bash", str(_local_test_sh(task, "/nonexistent/python"))], capture_output=True, timeout=300,
                   env={"PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"})
    assert task.reward_text() == "0.0\n"  # the verifier ran (it writes 0.0; the trap would write 0)

"""Fixtures for the differential oracle: tiny A/B repo pairs and a runner that executes the probe for real.

The runner does what the sandbox runners do (a fresh copy of the variant per call, the repo root as
working directory, the import root on PYTHONPATH, a scratch dir for the probe's files), with plain
subprocesses instead of a container.
"""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys
import textwrap
import types
from collections.abc import Callable
from pathlib import Path

import pytest

RepoPair = tuple[Path, Path]


def clean_env(import_root: Path) -> dict[str, str]:
    """The host's environment without pytest/Python/coverage settings; the repo's import root on PYTHONPATH.

    Third-party pytest plugins installed on the host are not loaded: a sandbox holds only the repo's
    own dependencies, and loading the host's takes longer than the probe itself.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "PYTHON", "COV"))}
    env.update(PYTHONPATH=str(import_root), PYTHONDONTWRITEBYTECODE="1", PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    return env


class LocalRunner:
    """Runs ``python <argv>`` in a fresh copy of repo A or B and returns ``{scratch}/out.json``."""

    def __init__(self, repos: dict[str, Path], work: Path, import_root: str = ".") -> None:
        self.repos = repos
        self.work = work
        self.import_root = import_root
        self.calls: list[tuple[str, list[str]]] = []

    def __call__(self, variant: str, argv: list[str], files: dict[str, str]) -> str:
        run_dir = self.work / f"run{len(self.calls)}"
        repo, scratch = run_dir / "repo", run_dir / "scratch"
        shutil.copytree(self.repos[variant], repo)
        scratch.mkdir()
        for name, text in files.items():
            (scratch / name).write_text(text)
        argv = [a.replace("{scratch}", str(scratch)) for a in argv]
        self.calls.append((variant, argv))
        env = clean_env(repo / self.import_root)
        proc = subprocess.run([sys.executable, *argv], cwd=repo, env=env, capture_output=True, text=True, timeout=120)
        out = scratch / "out.json"
        if not out.exists():
            raise RuntimeError(f"probe wrote nothing (exit {proc.returncode}): {proc.stderr[-2000:]}")
        return out.read_text()


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return root


@pytest.fixture
def import_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[str, str], types.ModuleType]:
    """Write ``source`` as module ``name`` in a temp dir on sys.path and import it (fresh each test)."""

    def load(name: str, source: str) -> types.ModuleType:
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
        monkeypatch.syspath_prepend(str(tmp_path))
        monkeypatch.delitem(sys.modules, name, raising=False)
        return importlib.import_module(name)

    return load


@pytest.fixture
def make_pair(tmp_path: Path) -> Callable[[dict[str, str], str, str, str], RepoPair]:
    """Build repo A from ``files`` and repo B with one textual replacement in ``target``."""

    counter = iter(range(10_000))

    def build(files: dict[str, str], target: str, old: str, new: str) -> RepoPair:
        root = tmp_path / f"pair{next(counter)}"
        a = write_tree(root / "A", files)
        b = write_tree(root / "B", files)
        text = (b / target).read_text()
        assert text.count(old) == 1, f"{old!r} must occur once in {target}"
        (b / target).write_text(text.replace(old, new))
        return a, b

    return build


@pytest.fixture
def runner_for(tmp_path: Path) -> Callable[..., LocalRunner]:
    counter = iter(range(10_000))

    def make(pair: RepoPair, import_root: str = ".") -> LocalRunner:
        work = tmp_path / f"runs{next(counter)}"
        work.mkdir()
        return LocalRunner({"A": pair[0], "B": pair[1]}, work, import_root)

    return make


@pytest.fixture
def run_test_file(tmp_path: Path) -> Callable[[Path, str, str], subprocess.CompletedProcess]:
    """Run a test file placed at ``test_path`` in a fresh copy of ``repo`` with a real pytest process."""
    counter = iter(range(10_000))

    def run(repo: Path, test_path: str, source: str, import_root: str = ".") -> subprocess.CompletedProcess:
        copy = tmp_path / f"check{next(counter)}"
        shutil.copytree(repo, copy)
        (copy / test_path).parent.mkdir(parents=True, exist_ok=True)
        (copy / test_path).write_text(source)
        env = clean_env(copy / import_root)
        return subprocess.run(
            [sys.executable, "-m", "pytest", test_path, "-q", "-p", "no:cacheprovider"],
            cwd=copy,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    return run

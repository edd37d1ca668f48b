"""Shared fixtures: the example repo, small git repos built on the fly, and real sandboxes.

Docker tests need a daemon and the base image. Outside CI they skip when those are missing; under CI
(`CI` set) they fail instead, so a broken Docker set-up can never pass as green.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Callable

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "minicart"
BASE_IMAGE = os.environ.get("R2E_BASE_IMAGE", "repo2rlenv-base:bookworm")


def _docker_problem() -> str | None:
    try:
        import docker

        client = docker.from_env(timeout=10)
        client.ping()
    except Exception as exc:
        return f"no Docker daemon ({type(exc).__name__})"
    try:
        client.images.get(BASE_IMAGE)
    except Exception:
        return f"base image {BASE_IMAGE} missing (scripts/build_base_image.sh)"
    return None


@pytest.fixture(scope="session")
def make_sandbox(request):
    """`make_sandbox(kind, limits, tag, cache_dir)`: the Docker sandbox on the local base image (Docker
    required, as `docker_ready`) or the local one."""
    def make(kind: str, limits, tag: str, cache_dir: Path):
        if kind == "docker":
            request.getfixturevalue("docker_ready")
            from repo2rlenv.sandbox.docker import DockerSandbox

            return DockerSandbox(base_image=os.environ.get("R2E_BASE_IMAGE", "repo2rlenv-base:bookworm"),
                                 limits=limits, tag_name=tag)
        from repo2rlenv.sandbox.local import LocalSandbox

        return LocalSandbox(limits=limits, cache_dir=cache_dir)

    return make


@pytest.fixture(scope="session")
def docker_ready() -> None:
    """Requires Docker; fails under CI (never skips there), skips elsewhere."""
    problem = _docker_problem()
    if problem is None:
        return
    if os.environ.get("CI"):
        pytest.fail(f"CI requires Docker for this test: {problem}")
    pytest.skip(f"{problem}; this test fails instead of skipping when CI is set")


@pytest.fixture
def example_repo(tmp_path: Path) -> Path:
    """A fresh copy of the bundled example package (a plain directory, no .git)."""
    dest = tmp_path / "minicart"
    shutil.copytree(EXAMPLE, dest, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", ".coverage"))
    return dest


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def make_repo(tmp_path: Path) -> Callable[..., Path]:
    """Build a small git repo from {path: text}; returns its root."""
    counter = {"n": 0}

    def build(files: dict[str, str], *, name: str | None = None, commit: bool = True) -> Path:
        counter["n"] += 1
        root = tmp_path / (name or f"repo{counter['n']}")
        for rel, text in files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        if commit:
            git(root, "init", "-q", "-b", "main")
            git(root, "add", "-A")
            git(root, "commit", "-q", "-m", "initial")
        return root

    return build


def _tiny_package(tests: str, source: str | None = None) -> dict[str, str]:
    return {
        "pyproject.toml": '[project]\nname = "tinypkg"\nversion = "0.0.1"\n'
                          '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n',
        "tinypkg/__init__.py": "",
        "tinypkg/core.py": source or "def add(a, b):\n    return a + b\n",
        "tests/test_core.py": tests,
    }


@pytest.fixture
def tiny_package() -> Callable[..., dict[str, str]]:
    """Files of a one-module package `tinypkg` (a setuptools project) with the given test module."""
    return _tiny_package


@pytest.fixture
def run_git() -> Callable[..., str]:
    """`run_git(cwd, *args)`: git with a fixed identity; returns stdout."""
    return git


@pytest.fixture(scope="session")
def r2e_cache(tmp_path_factory) -> Path:
    """One repo2rlenv cache (clones, local-sandbox venvs) for the whole session: entries are keyed by
    content, so sharing it only saves rebuilding identical venvs."""
    return tmp_path_factory.mktemp("r2e-cache")

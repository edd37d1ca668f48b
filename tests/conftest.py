"""Shared fixtures: the example repo, small git repos built on the fly, and real sandboxes.

Docker tests need a daemon and the base image. Outside CI they skip when those are missing; under CI
(`CI` set) they fail instead, so a broken Docker set-up can never pass as green.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from contextlib import contextmanager
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


@pytest.fixture(scope="module")
def local_repo_session(tmp_path_factory):
    """`with local_repo_session(files, tag) as (root, sandbox, session)`: a repo made of `files` (path -> text),
    the local sandbox prepared on it, and a session open there."""
    from repo2rlenv.sandbox.base import Limits
    from repo2rlenv.sandbox.local import LocalSandbox

    @contextmanager
    def open_session(files: dict[str, str], tag: str):
        root = tmp_path_factory.mktemp(tag) / "repo"
        for rel, text in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
        sandbox = LocalSandbox(limits=Limits(timeout_sec=120), cache_dir=tmp_path_factory.mktemp("cache"))
        sandbox.prepare(root)
        with sandbox.open() as session:
            yield root, sandbox, session

    return open_session


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


@pytest.fixture(scope="session")
def scored_dataset(tmp_path_factory, docker_ready, r2e_cache) -> Path:
    """A validated dataset of two example tasks; tests copy it before changing anything."""
    from repo2rlenv.config import GenerateConfig
    from repo2rlenv.generate import run_generate
    from repo2rlenv.progress import Reporter

    root = tmp_path_factory.mktemp("scoring")
    repo = root / "minicart"
    shutil.copytree(EXAMPLE, repo, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", ".coverage"))
    out = root / "ds"
    config = GenerateConfig(repo=str(repo), out=out, sandbox="docker", cache_dir=r2e_cache,
                            pipeline_opts={"strategy": "mutation", "limit": 2, "seed": 3})
    result = run_generate(config, Reporter(quiet=True))
    assert len(result.emitted) == 2, result
    return out


@pytest.fixture(scope="session")
def oracle_of():
    """`oracle_of(dataset, task_id)`: the task's reference test file."""

    def read(dataset: Path, task_id: str) -> str:
        from repo2rlenv.dataset.taskdir import DatasetPaths

        task = DatasetPaths(dataset).task(task_id)
        return next(task.solution.glob("test_*.py")).read_text()

    return read


@pytest.fixture
def dump_dom(tmp_path) -> Callable[[str], str]:
    """`dump_dom(url)`: the page's DOM after its scripts ran, from headless Chromium (Debian's package).
    Outside CI a missing Chromium skips; under CI it fails."""
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        if os.environ.get("CI"):
            pytest.fail("CI requires Debian's chromium for page tests (apt-get install chromium)")
        pytest.skip("chromium not installed; this test fails instead of skipping when CI is set")

    def dump(url: str) -> str:
        # The background-networking flags keep Chromium from calling out (this machine has no network).
        proc = subprocess.run(
            [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'chromium-profile'}", "--virtual-time-budget=2000", "--dump-dom", url],
            capture_output=True, text=True, timeout=120, check=False)
        assert proc.returncode == 0, proc.stderr[-2000:]
        return proc.stdout

    return dump


def minimal_task_toml(task_id: str, *, function: str = "pkg/mod.py::f", repo: str = "o/r", test_path: str = "",
                      siblings: int = 0, difficulty: str = "easy") -> str:
    """A task.toml that the model reads, with placeholder values where a test does not care."""
    from repo2rlenv.dataset.task_toml import (AgentSection, EnvironmentSection, Metadata, Repo2EnvMeta, TaskInfo,
                                              TaskToml, TestSynthesisMeta, VerifierSection)

    meta = TestSynthesisMeta(touched_function=function, test_path=test_path or f"tests/test_r2e_{task_id[-4:]}.py",
                             strategy="mutation", oracle_kind="differential", reward_mode="gated",
                             coverage_weight=0.5, min_new_tests=1, max_test_loc=200, baseline_coverage=1.0,
                             baseline_full_coverage=True, siblings=siblings)
    return TaskToml(task=TaskInfo(name=f"r2e/{task_id}", description="a test task"),
                    metadata=Metadata(difficulty=difficulty, repo2env=Repo2EnvMeta(
                        pipeline_version="0", repo=repo, content_hash=task_id, test_synthesis=meta)),
                    agent=AgentSection(timeout_sec=600), verifier=VerifierSection(timeout_sec=600),
                    environment=EnvironmentSection(build_timeout_sec=600, cpus=1, memory_mb=2048,
                                                   storage_mb=4096)).to_toml()


@pytest.fixture(scope="session")
def task_toml_text() -> Callable[..., str]:
    """`task_toml_text(task_id, difficulty=..., ...)`: a complete task.toml (`minimal_task_toml`)."""
    return minimal_task_toml


@pytest.fixture(scope="session")
def make_task() -> Callable[..., Path]:
    """`make_task(dataset_root, task_id, diff=..., siblings=(), oracle=..., function=..., repo=...)`: the files
    of a task that dataset-level code reads (a task.toml that the model reads, B's and the siblings' diffs,
    the oracle), without the rest; for the rules that read only those."""

    def make(root: Path, task_id: str, *, diff: str, siblings=(), oracle: str = "def test_f():\n    assert 1\n",
             function: str = "pkg/mod.py::f", repo: str = "o/r") -> Path:
        task = root / "tasks" / task_id
        (task / "tests").mkdir(parents=True)
        (task / "solution").mkdir()
        test_path = f"tests/test_r2e_{task_id[-4:]}.py"
        (task / "task.toml").write_text(minimal_task_toml(task_id, function=function, repo=repo, test_path=test_path,
                                                          siblings=len(siblings)))
        (task / "tests" / "broken_patch.diff").write_text(diff)
        if siblings:
            (task / "tests" / "siblings").mkdir()
            for i, text in enumerate(siblings, 1):
                (task / "tests" / "siblings" / f"{i:02d}.diff").write_text(text)
        (task / "solution" / Path(test_path).name).write_text(oracle)
        return task

    return make


@pytest.fixture(scope="session")
def age_task() -> Callable[[Path], Path]:
    """`age_task(task_dir)`: make a task look as an older repo2rlenv wrote it, in place: task.toml records no
    verifier version, one verifier module has older content and one module the verifier has since dropped
    is there too. Returns the task dir."""
    import tomllib

    import tomli_w

    def age(task: Path) -> Path:
        toml = task / "task.toml"
        data = tomllib.loads(toml.read_text())
        data["metadata"]["repo2env"].pop("verifier_version", None)
        toml.write_text("# Generated by repo2rlenv (pipeline test_synthesis). Harbor task definition.\n"
                        + tomli_w.dumps(data))
        reward = task / "tests" / "verifier_reward.py"
        reward.write_text(reward.read_text() + "\n# an older verifier's copy\n")
        (task / "tests" / "verifier_dropped.py").write_text("# a module this verifier no longer has\n")
        return task

    return age

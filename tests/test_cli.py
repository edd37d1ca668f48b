"""The CLI as a user meets it: help everywhere, and every bad input is one line, exit 2, nothing written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "minicart"


def cli(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "repo2rlenv", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, cwd=cwd, timeout=600)


@pytest.mark.parametrize("command", [[], ["generate"], ["demo"]])
def test_help_on_every_command(command):
    res = cli(*command, "--help")
    assert res.returncode == 0
    assert "Usage:" in res.stdout


def _bad(tmp_path: Path, *args: str, env: dict[str, str] | None = None, cache: Path | None = None) -> str:
    out = tmp_path / "out"
    res = cli("generate", "--out", str(out), *args,
              env={"REPO2RLENV_CACHE": str(cache or tmp_path / "cache"), **(env or {})})
    assert res.returncode == 2, (res.stdout, res.stderr)
    lines = [ln for ln in res.stderr.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1, res.stderr
    assert "Traceback" not in res.stderr
    assert not out.exists(), "nothing may be written under --out on bad input"
    return lines[0]


@pytest.mark.parametrize(
    ("args", "needle"),
    [(["--pipeline", "nope", "--repo", str(EXAMPLE)], "unknown pipeline 'nope' (known: test_synthesis)"),
     (["--repo", str(EXAMPLE), "--pipeline-opt", "limt=3"], "unknown pipeline option 'limt'"),
     (["--repo", str(EXAMPLE), "--pipeline-opt", "limit=0"], "pipeline option 'limit': 0 is not allowed"),
     (["--repo", str(EXAMPLE), "--pipeline-opt", "strategy=magic"], "'strategy': 'magic' is not allowed"),
     (["--repo", "/definitely/not/here"], "repository not found"),
     (["--repo", "file:///definitely/not/here.git"], "cannot clone file:///definitely/not/here.git"),
     (["--repo", str(EXAMPLE), "--ref", "main"], "needs a git repository"),
     (["--repo", str(EXAMPLE), "--config", "/no/such.toml"], "config file not found"),
     ([], "no repository given"),
     (["--repo", str(EXAMPLE)], "strategy 'commit_pair' needs git history")],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, needle):
    assert needle in _bad(tmp_path, *args)


def test_docker_requested_without_daemon(tmp_path):
    line = _bad(tmp_path, "--repo", str(EXAMPLE), "--sandbox", "docker", "--pipeline-opt", "strategy=mutation",
                env={"DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock"})
    assert "no Docker daemon answers" in line


@pytest.mark.parametrize(
    ("tests", "needle"),
    [(None, "has no tests pytest can collect"), ("def test_a():\n    assert 0\n", "no test passes at the ref")],
)
def test_repo_without_usable_tests(tmp_path, make_repo, tiny_package, tests, needle, r2e_cache):
    files = tiny_package(tests or "")
    if tests is None:
        files.pop("tests/test_core.py")
    root = make_repo(files, commit=False)
    line = _bad(tmp_path, "--repo", str(root), "--sandbox", "local", "--pipeline-opt", "strategy=mutation",
                cache=r2e_cache)
    assert needle in line

"""The CLI as a user meets it: help everywhere, and every bad input is one line, exit 2, nothing written."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "minicart"


def cli(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "repo2rlenv", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, cwd=cwd, timeout=600)


@pytest.mark.parametrize("command", [[], ["generate"], ["demo"], ["doctor"]])
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
     (["--repo", "file:///definitely/not/here.git"],
      "cannot clone file:///definitely/not/here.git: fatal: '/definitely/not/here.git' does not appear to be a git repository"),
     (["--repo", str(EXAMPLE), "--ref", "main"], "needs a git repository"),
     (["--repo", str(EXAMPLE), "--config", "/no/such.toml"], "config file not found"),
     ([], "no repository given"),
     (["--repo", str(EXAMPLE), "--pipeline-opt", "strategy=commit_pair"], "strategy 'commit_pair' needs git history"),
     # The model is checked before the source is opened or a container started (llm/preflight.py).
     (["--repo", str(EXAMPLE), "--llm", "scripted", "--llm-base-url", "http://127.0.0.1:9/v1"],
      "--llm scripted: litellm cannot tell which provider serves it"),
     (["--repo", str(EXAMPLE), "--llm", "openai/x", "--llm-base-url", "http://127.0.0.1:9/v1"],
      "openai/x at http://127.0.0.1:9/v1 cannot be reached"),
     (["--repo", str(EXAMPLE), "--llm", "openai/x", "--api-key-env", "R2E_NO_SUCH_KEY"], "R2E_NO_SUCH_KEY is not set"),
     (["--repo", str(EXAMPLE), "--llm", "openai/x", "--max-spend-usd", "1"], "--max-spend-usd needs a price"),
     (["--repo", str(EXAMPLE), "--pipeline-opt", "oracle=llm"], "need a model: pass --llm provider/model")],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, needle):
    assert needle in _bad(tmp_path, *args)


@pytest.mark.parametrize(
    ("lines", "args", "needle"),
    [("owner/a limit\n", [], "corpus.txt:1: expected KEY=VALUE after the repository, got 'limit'"),
     ("owner/a\nowner/b limit=0\n", [], "corpus.txt:2: pipeline option 'limit': 0 is not allowed"),
     ("owner/a\n./no-such-dir\n", [], "corpus.txt:2: no such directory: ./no-such-dir"),
     ("owner/a\nowner/a\n", [], "corpus.txt:2: owner/a is listed twice"),
     ("# empty\n", [], "lists no repository"),
     ("owner/a\n", ["--ref", "main"], "--ref is for one repo"),
     ("owner/a\n", ["--max-tasks", "0"], "--max-tasks must be at least 1"),
     ("owner/a\n", ["--executor", "ray", "--workers", "0"], "--workers must be at least 1"),
     ("owner/a\n", ["--workers", "2"], "--address and --workers are for --executor ray"),
     ("owner/a\n", ["--llm", "openai/x", "--llm-base-url", "http://127.0.0.1:9/v1"], "cannot be reached")],
)
def test_a_bad_corpus_is_one_line_and_exit_2(tmp_path, lines, args, needle):
    listing = tmp_path / "corpus.txt"
    listing.write_text(lines)
    assert needle in _bad(tmp_path, "--repos", str(listing), *args)


def test_corpus_flags_need_a_corpus(tmp_path):
    assert "--max-tasks is for corpus runs" in _bad(tmp_path, "--repo", str(EXAMPLE), "--max-tasks", "3")


def test_docker_requested_without_daemon(tmp_path):
    line = _bad(tmp_path, "--repo", str(EXAMPLE), "--sandbox", "docker", "--pipeline-opt", "strategy=mutation",
                env={"DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock"})
    assert "no Docker daemon answers" in line


def _stage_failure(tmp_path: Path, *args: str, cache: Path) -> tuple[str, Path]:
    """A generate that fails on the repo: exit 1, one `error: STAGE: cause (full output: LOG)` line, the log
    under --out/logs and nothing else left under --out."""
    out = tmp_path / "out"
    res = cli("generate", "--out", str(out), *args, env={"REPO2RLENV_CACHE": str(cache)})
    assert res.returncode == 1, (res.stdout, res.stderr)
    lines = [ln for ln in res.stderr.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
    match = re.fullmatch(r"error: (\w+): (.+) \(full output: (.+)\)", lines[0])
    assert match, lines[0]
    log = Path(match[3])
    assert log.is_file() and log.parent == out / "logs"
    assert [p.name for p in out.iterdir()] == ["logs"], "a failed run leaves only its log"
    return lines[0], log


@pytest.mark.parametrize(
    ("tests", "needle"),
    [(None, "has no tests pytest can collect"), ("def test_a():\n    assert 0\n", "no test passes at the ref")],
)
def test_repo_without_usable_tests(tmp_path, make_repo, tiny_package, tests, needle, r2e_cache):
    # The repo's suite, not the user's input: the baseline stage failed, exit 1 (issue 14).
    files = tiny_package(tests or "")
    if tests is None:
        files.pop("tests/test_core.py")
    root = make_repo(files, commit=False)
    line, log = _stage_failure(tmp_path, "--repo", str(root), "--sandbox", "local", "--pipeline-opt",
                               "strategy=mutation", cache=r2e_cache)
    assert line.startswith("error: baseline: ") and needle in line
    assert "BaselineError" in log.read_text() and "Traceback" in log.read_text()


def test_failed_environment_names_the_stage_and_keeps_pip_output(tmp_path, make_repo, tiny_package, r2e_cache):
    files = tiny_package("def test_a():\n    assert 1\n")
    files["setup.py"] = "raise SystemExit('r2e-test: this project cannot be built')\n"
    files["pyproject.toml"] = files["pyproject.toml"].replace('[project]\nname = "tinypkg"\nversion = "0.0.1"\n', "")
    root = make_repo(files, commit=False)
    line, log = _stage_failure(tmp_path, "--repo", str(root), "--sandbox", "local", "--pipeline-opt",
                               "strategy=mutation", cache=r2e_cache)
    assert line.startswith("error: environment: ")
    assert "preparing the local venv failed" in log.read_text() and "Traceback" in log.read_text()


def test_emitting_nothing_says_why(tmp_path, make_repo, tiny_package, r2e_cache):
    # The suite passes but imports nothing of the package: no function is covered, nothing is emitted.
    source = "def clamp(x, lo, hi):\n    if x < lo:\n        return lo\n    if x > hi:\n        return hi\n    return x\n"
    root = make_repo(tiny_package("def test_arith():\n    assert 1 + 1 == 2\n", source), commit=False)
    out = tmp_path / "out"
    res = cli("generate", "--out", str(out), "--repo", str(root), "--sandbox", "local",
              "--pipeline-opt", "strategy=mutation", env={"REPO2RLENV_CACHE": str(r2e_cache)})
    assert res.returncode == 1, res.stderr
    advice = json.loads((out / "summary.json").read_text())["advice"]
    assert advice["reason"] == "function: module not imported by the suite"
    assert advice["line"].startswith("emitted 0 of ") and "no function is covered by the suite" in advice["line"]
    assert advice["line"] in " ".join(res.stderr.split()), res.stderr

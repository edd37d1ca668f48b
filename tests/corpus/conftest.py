"""A small real corpus (the two bundled examples and a repo that fails) and its uninterrupted run, which
the kill tests compare their datasets with."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# The broken repo comes first: it fails and gives its budget back; --max-tasks 3 then leaves unitconv one.
MAX_TASKS = "3"


@pytest.fixture(scope="session")
def corpus_list(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("corpus-list")
    (root / "not-python").mkdir()
    (root / "not-python" / "README.md").write_text("no Python package here\n")
    listing = root / "corpus.txt"
    # One sibling per task: these tests are about driving a corpus (budgets, reruns, a killed driver or
    # worker), and each of them generates the whole corpus again; a sibling search is seconds per task.
    listing.write_text(f"not-python\n{ROOT}/examples/minicart limit=2 siblings=1\n"
                       f"{ROOT}/examples/unitconv limit=2 siblings=1\n")
    return listing


def corpus_command(listing: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "repo2rlenv", "generate", "--repos", str(listing), "--out", str(out),
            "--pipeline-opt", "strategy=mutation", "--max-tasks", MAX_TASKS, *extra]


def run_corpus_cli(listing: Path, out: Path, *extra: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(corpus_command(listing, out, *extra), capture_output=True, text=True, timeout=1500,
                          env={**os.environ, **(env or {})})


def tree_digest(root: Path) -> dict[str, str]:
    """Every file and link under `root` by relative path: its bytes' hash (or the link's target)."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            out[rel] = "-> " + os.readlink(path)
        elif path.is_file():
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def wait_for(predicate, timeout: float, what: str, proc: subprocess.Popen | None = None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        if proc is not None and proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"the run ended (exit {proc.returncode}) before {what}:\n{err[-3000:]}")
        time.sleep(0.5)
    pytest.fail(f"timed out waiting for {what}")


@pytest.fixture(scope="session")
def uninterrupted_corpus(corpus_list, tmp_path_factory, docker_ready) -> Path:
    out = tmp_path_factory.mktemp("corpus-clean") / "dataset"
    res = run_corpus_cli(corpus_list, out)
    assert res.returncode == 0, res.stderr[-4000:]
    return out

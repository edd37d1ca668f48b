"""Build small real test_synthesis tasks on disk for the verifier tests.

A task here is what the emitter produces and Harbor runs: a workspace with a tiny package (`shopcalc`,
src layout, its own test suite) and the agent's submission, a tests/ dir with the verifier installed
flat, its config, the A→B diff, sibling diffs and the manifest, and a logs dir.

When the tests run as root, the verifier drops the test runs to uid 65534. This machine's interpreter
may live where that uid cannot read it (e.g. under /root), so `portable_python` builds a world-readable
venv from a system Python of the same version with pytest and coverage copied in; the verifier is then
pointed at it with `python=`.
"""

from __future__ import annotations

import ast
import importlib.metadata
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from repo2rlenv.sandbox import kernel_ext
from repo2rlenv.verifiers.bundle import install_verifier, workspace_manifest, write_pristine_archive
from repo2rlenv.verifiers.config_model import VariantDiffs, VerifierConfig
from repo2rlenv.verifiers.test_synthesis.verifier import score
from repo2rlenv.verifiers.test_synthesis.verifier_patch import make_diff

TARGET = "src/shopcalc/pricing.py"
SUBMISSION = "tests/test_r2e_0badc0de.py"
PRICING = '''"""Prices for a tiny shop."""

# The tax rate; A′ drops this comment.
TAX = 0.2


def apply_discount(price, percent):
    """Price after a percentage discount; more than half off is capped at half the price."""
    if percent < 0 or percent > 100:
        raise ValueError("percent out of range")
    factor = 1 - percent / 100  # A′ renames this local
    discounted = round(price * factor, 2)
    if percent > 50:
        discounted = max(discounted, price / 2)
    return discounted


def with_tax(price):
    return round(price * (1 + TAX), 2)
'''
FILES = {
    "pyproject.toml": '[project]\nname = "shopcalc"\nversion = "0.1.0"\n\n[tool.pytest.ini_options]\n'
                      'addopts = "-x"\n',
    "src/shopcalc/__init__.py": '"""A tiny shop."""\n',
    TARGET: PRICING,
    "tests/test_pricing.py": "from shopcalc.pricing import apply_discount, with_tax\n\n\n"
                             "def test_discount():\n    assert apply_discount(100, 10) == 90\n\n\n"
                             "def test_tax():\n    assert with_tax(10) == 12\n",
}
# B and the siblings: one-token mutants of apply_discount.
BROKEN = ("percent > 100", "percent >= 100")  # 100% off now raises
SIBLINGS = (("percent < 0", "percent <= 0"),  # 0% off now raises
            ("price / 2", "price / 3"))  # the cap moves
RAISE_LINE = PRICING.splitlines().index('        raise ValueError("percent out of range")') + 1
CAP_LINE = PRICING.splitlines().index("        discounted = max(discounted, price / 2)") + 1

# Passes on A, fails on B, reaches both baseline-uncovered lines: reward 1.0.
GOOD_TEST = '''import pytest

from shopcalc.pricing import apply_discount


def test_edges():
    with pytest.raises(ValueError):
        apply_discount(10, 101)
    assert apply_discount(10, 80) == 5
    assert apply_discount(10, 100) == 5
'''


def function_lines(source: str, name: str) -> list[int]:
    """Executable statement lines of a top-level function (docstring excluded)."""
    fn = next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == name)
    body = fn.body[1:] if ast.get_docstring(fn) else fn.body
    return sorted({n.lineno for stmt in body for n in ast.walk(stmt) if isinstance(n, ast.stmt)})


def mutate(source: str, old: str, new: str) -> str:
    assert source.count(old) == 1, old
    return source.replace(old, new)


@dataclass(frozen=True)
class Task:
    """A task on disk: where the agent worked, the graded tests/ dir, Harbor's logs dir."""

    workspace: Path
    tests_dir: Path
    logs_dir: Path
    python: str

    def score(self, **kwargs: Any) -> dict[str, Any]:
        kwargs.setdefault("python", self.python)
        return score(self.workspace, self.tests_dir, self.logs_dir, **kwargs)

    def reward_text(self) -> str:
        return (self.logs_dir / "reward.txt").read_text()

    def write_submission(self, text: str) -> None:
        path = self.workspace / SUBMISSION
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def build_task(root: Path, submission: str | None, *, python: str, siblings: int = 0,
               broken: tuple[str, str] = BROKEN, flat: bool = False, extra_files: dict[str, str] | None = None,
               **config: Any) -> Task:
    """Write workspace, tests dir and logs dir under `root`; `config` overrides VerifierConfig fields.

    `flat`: the package at the repo root (import root "") instead of under src/. `extra_files`: more repo
    files (relative path → text), e.g. the repo's own pytest configuration.
    """
    workspace, tests_dir, logs_dir = root / "workspace", root / "tests", root / "logs"
    files = {(rel.removeprefix("src/") if flat else rel): text for rel, text in FILES.items()}
    files.update(extra_files or {})
    target = TARGET.removeprefix("src/") if flat else TARGET
    for rel, text in files.items():
        (workspace / rel).parent.mkdir(parents=True, exist_ok=True)
        (workspace / rel).write_text(text)
    install_verifier(tests_dir)
    (tests_dir / "broken_patch.diff").write_text(make_diff(target, PRICING, mutate(PRICING, *broken)))
    sibling_paths = []
    for k, (old, new) in enumerate(SIBLINGS[:siblings], 1):
        rel = f"siblings/{k:02d}.diff"
        (tests_dir / rel).parent.mkdir(exist_ok=True)
        (tests_dir / rel).write_text(make_diff(target, PRICING, mutate(PRICING, old, new)))
        sibling_paths.append(rel)
    (tests_dir / "workspace_manifest.json").write_text(
        workspace_manifest(workspace, files).model_dump_json(indent=2))
    fields: dict[str, Any] = dict(
        submission=SUBMISSION, target_file=target, target_qualname="apply_discount",
        function_lines=function_lines(PRICING, "apply_discount"), coverage_targets=[RAISE_LINE, CAP_LINE],
        baseline_full_coverage=False, import_roots=[""] if flat else ["src"], min_new_tests=1, max_test_loc=200,
        run_timeout_sec=30, memory_mb=1024, variants=VariantDiffs(siblings=sibling_paths))
    fields.update(config)
    verifier_config = VerifierConfig(**fields)
    if verifier_config.pristine_archive is not None:
        assert write_pristine_archive(workspace, files, tests_dir / verifier_config.pristine_archive)
    verifier_config.write(tests_dir / "verifier_config.json")
    task = Task(workspace, tests_dir, logs_dir, python)
    if submission is not None:
        task.write_submission(submission)
    return task


# --------------------------------------------------------------------------- an interpreter uid 65534 can use

def _usable_by_nobody(python: str) -> bool:
    try:
        done = subprocess.run([python, "-c", "import pytest, coverage"], user=65534, group=65534, extra_groups=[],
                              cwd="/", env={"PATH": "/usr/bin:/bin"}, capture_output=True, timeout=60)
    except OSError:
        return False
    return done.returncode == 0


def _copy_distribution(name: str, site_packages: Path) -> None:
    dist = importlib.metadata.distribution(name)
    for file in dist.files or []:
        src = Path(str(dist.locate_file(file)))
        if ".." in file.parts or not src.is_file():
            continue
        dest = site_packages / file
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest)


def build_portable_python(parent: Path | None = None) -> tuple[str, Path | None]:
    """(interpreter uid 65534 can run pytest+coverage with, dir to delete afterwards or None)."""
    if os.geteuid() != 0 or _usable_by_nobody(sys.executable):
        return sys.executable, None
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    base = shutil.which(f"python{version}", path="/usr/bin:/usr/local/bin:/bin")
    if base is None:
        raise RuntimeError(f"root, but no system python{version} that uid 65534 can run: cannot test the uid drop")
    home = Path(tempfile.mkdtemp(prefix="r2e-portable-python-", dir=parent or "/tmp"))
    home.chmod(0o755)
    subprocess.run([base, "-m", "venv", "--without-pip", str(home / "venv")], check=True, capture_output=True)
    site_packages = home / "venv" / "lib" / f"python{version}" / "site-packages"
    for name in ("pytest", "pluggy", "iniconfig", "packaging", "pygments", "coverage"):
        _copy_distribution(name, site_packages)
    # The kernel extension the base images carry: without it the runs would confine themselves through
    # ctypes, and the graded runs would not be the ones a task image gives.
    kernel_ext.build(str(home / "venv" / "bin" / "python"), site_packages)
    for dirpath, dirnames, filenames in os.walk(home):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            if not os.path.islink(path):  # bin/python links to the system interpreter: never chmod that
                os.chmod(path, 0o755 if name in dirnames else 0o644)
    python = home / "venv" / "bin" / "python"
    if not _usable_by_nobody(str(python)):
        raise RuntimeError(f"built {python}, but uid 65534 still cannot import pytest and coverage with it")
    return str(python), home

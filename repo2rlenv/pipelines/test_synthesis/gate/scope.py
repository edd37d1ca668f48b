"""Which test files decide a commit's pairs: the covering tests first, the whole suite only for emission.

Judging a unit of history used to run the whole suite at its commit, with coverage and a rerun, before
its first gate; on a library whose suite takes minutes that is minutes per commit, and most commits are
dropped by that gate. Whether a commit's pairs survive their gates is decided by the tests that run the
changed functions, so those run first; the whole suite runs once per commit, and only when a pair of it
has an oracle (gate/late.py's whole-suite gate then reads the full baseline).

A test file is in scope when
- it covered the changed file at the run's ref (the ref baseline's per-test coverage: history is judged
  at commits older than the ref, where a file keeps its tests more often than not), or
- its text names a changed function, its class, or its module (an import of `pkg.mod` or `from pkg import
  mod`): the tests written against it.
A file outside the scope that covers the change is still run before emission (the whole suite on A and
on B), so a wrong scope costs time, never a wrong task. When the scope is empty, or most of the suite
anyway, the whole suite runs at once.
"""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Iterable

from repo2rlenv.baseline.coverage_map import CoverageMap
from repo2rlenv.pysource.functions import FunctionRecord

# pytest's default `python_files`.
DEFAULT_PATTERNS = ("test_*.py", "*_test.py")
# Above this share of the suite's files the scope saves too little to pay a second session of runs.
WHOLE_SUITE_SHARE = 0.6
# Directories never holding the repo's own tests.
_SKIP_DIRS = frozenset({".git", ".tox", ".nox", ".venv", "venv", "node_modules", "build", "dist", "__pycache__",
                        ".eggs", "site-packages"})


@dataclass(frozen=True, slots=True)
class Scope:
    """The test files a commit's gates run (`files` None: the whole suite) and why, for the record."""

    files: list[str] | None
    note: str

    @property
    def whole(self) -> bool:
        return self.files is None


def suite_files(tree: Path, roots: Iterable[str], patterns: Iterable[str] = ()) -> list[str]:
    """The suite's test files under `tree` (relative POSIX paths), below `roots` (empty: the whole tree)."""
    pats = tuple(patterns) or DEFAULT_PATTERNS
    found: set[str] = set()
    for root in list(roots) or [""]:
        top = tree / root
        if top.is_file():
            found.add(PurePosixPath(root).as_posix())
            continue
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames[:] = [d for d in dirnames if d not in _SKIP_DIRS and not d.startswith(".")]
            for name in filenames:
                if any(fnmatch.fnmatch(name, p) for p in pats):
                    found.add(Path(dirpath, name).relative_to(tree).as_posix())
    return sorted(found)


def _names_pattern(functions: Iterable[FunctionRecord]) -> re.Pattern[str]:
    """Words a test written against one of `functions` contains: the function's or its class's name, or
    its module's last component after `import` or a dot."""
    words: set[str] = set()
    modules: set[str] = set()
    for fn in functions:
        if not fn.name.startswith("__"):
            words.add(re.escape(fn.name))
        if fn.class_name:
            words.add(re.escape(fn.class_name.split(".")[0]))
        last = fn.module.rsplit(".", 1)[-1]
        if last and last != "__init__":
            modules.add(re.escape(last))
    parts = [rf"\b(?:{'|'.join(sorted(words))})\b"] if words else []
    if modules:
        alt = "|".join(sorted(modules))
        parts.append(rf"(?:import\s+(?:[\w.]+\.)?(?:{alt})\b|\b(?:{alt})\.|import\s*\(?[^\n]*\b(?:{alt})\b)")
    return re.compile("|".join(parts) if parts else r"(?!x)x")


def _covering_at_ref(coverage: CoverageMap | None, paths: set[str]) -> set[str]:
    """Test files that ran any line of `paths` in the ref's baseline."""
    if coverage is None:
        return set()
    files: set[str] = set()
    for path in paths:
        fc = coverage.files.get(path)
        if fc is None:
            continue
        for indices in fc.contexts.values():
            files.update(coverage.tests[i].split("::", 1)[0] for i in indices)
    return files


def commit_scope(tree: Path, functions: list[FunctionRecord], *, roots: Iterable[str], patterns: Iterable[str] = (),
                 ref_coverage: CoverageMap | None = None, enabled: bool = True) -> Scope:
    """The test files that decide the gates of the pairs changing `functions` at the commit in `tree`."""
    files = suite_files(tree, roots, patterns)
    if not enabled:
        return Scope(None, "whole suite (gate_scope=suite)")
    if not files:
        return Scope(None, "whole suite (no test file found by name)")
    present = set(files)
    chosen = _covering_at_ref(ref_coverage, {fn.path for fn in functions}) & present
    pattern = _names_pattern(functions)
    for rel in files:
        if rel in chosen:
            continue
        try:
            text = (tree / rel).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if pattern.search(text):
            chosen.add(rel)
    if not chosen:
        return Scope(None, f"whole suite (no test file of {len(files)} names the change)")
    if len(chosen) >= WHOLE_SUITE_SHARE * len(files):
        return Scope(None, f"whole suite ({len(chosen)} of {len(files)} test files name the change)")
    return Scope(sorted(chosen), f"{len(chosen)} of {len(files)} test files (covering the change)")

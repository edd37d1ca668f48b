"""Bytecode for the copies: each module a run imports is compiled once per grading, not once per run.

Runs see no bytecode of the copy otherwise (the copies are fresh and runs write none), so every run
recompiled every module of the repository it imported: for more-itertools, whose `more.py` is 170 KB,
that was 40-70 ms in each of the three runs. The verifier now writes checked-hash pycs (PEP 552: valid
while the source's hash matches, whatever the mtimes) for the target's top-level package into the
staged A while the zygote warms up, and each variant's changed modules get their own pycs, written
like every other file the variants touch, so every copy holds the same set of files. A module loaded
from a valid pyc behaves as one compiled from its source: same code, same `__file__` and `__cached__`.

Files pytest rewrites on import (test files, `conftest.py`) are skipped: pytest ignores plain pycs for
them. Stdlib only: copied verbatim into every task.
"""

from __future__ import annotations

import importlib.util
import marshal
import os
import sys
import types
from pathlib import Path

# Source compiles at roughly 2-4 MB/s: past this much the parent's compiling would outlast the zygote's
# warm-up by far, and a big package's modules are mostly never imported by one function's tests.
MAX_SOURCE_BYTES = 2_000_000
PYC_FLAGS_CHECKED_HASH = 0b11  # PEP 552: hash-based, and checked against the source at import


def pyc_relpath(relpath: str) -> str:
    """Where the import system looks for `relpath`'s bytecode (`dir/__pycache__/name.<tag>.pyc`)."""
    return Path(importlib.util.cache_from_source(relpath)).as_posix()


def pytest_rewrites(relpath: str) -> bool:
    """Whether pytest's assertion rewriting imports this file (its default patterns), not plain import."""
    name = relpath.rsplit("/", 1)[-1]
    return name == "conftest.py" or (name.startswith("test_") and name.endswith(".py")) or name.endswith("_test.py")


def pyc_bytes(source: bytes, run_path: Path, code: types.CodeType | None = None) -> bytes | None:
    """A checked-hash pyc of `source` as compiled at `run_path` (or of `code`, its code compiled already);
    None when it does not compile. The import system sets the loaded code's filename to where it finds
    the source, so one pyc serves every copy."""
    if code is None:
        try:
            # optimize=0: the runs start without -O, whatever this interpreter was given
            code = compile(source, str(run_path), "exec", dont_inherit=True, optimize=0)
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            return None  # the run reports it the way Python does when it imports the file
    header = importlib.util.MAGIC_NUMBER + PYC_FLAGS_CHECKED_HASH.to_bytes(4, "little")
    return header + importlib.util.source_hash(source) + marshal.dumps(code)


def modules_to_compile(stage: Path, target: str, changed: list[str], import_roots: list[str]) -> list[str]:
    """The staged .py files worth compiling: those a variant changes, then the rest of the target's
    top-level package (just the target for a top-level module), in path order, without the files
    pytest rewrites; at most MAX_SOURCE_BYTES of source. Empty when this interpreter caches no bytecode."""
    if sys.implementation.cache_tag is None:
        return []
    root = max((r for r in import_roots if not r or target.startswith(r.rstrip("/") + "/")), key=len, default="")
    inside = target[len(root.rstrip("/")) + 1:] if root else target
    package = []
    if "/" in inside:
        base = stage / (f"{root.rstrip('/')}/" if root else "") / inside.split("/", 1)[0]
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            package += [os.path.relpath(os.path.join(dirpath, f), stage).replace(os.sep, "/")
                        for f in filenames if f.endswith(".py")]
    chosen, total = [], 0
    for rel in [*sorted(changed), target, *sorted(package)]:
        if rel in chosen or not rel.endswith(".py") or pytest_rewrites(rel) or not (stage / rel).is_file():
            continue
        total += os.path.getsize(stage / rel)
        if total > MAX_SOURCE_BYTES:
            break
        chosen.append(rel)
    return chosen


def compile_stage(stage: Path, run_root: Path, relpaths: list[str]) -> list[str]:
    """Write the pycs of `relpaths` (as run under `run_root`) into `stage`; returns those compiled."""
    done = []
    for rel in relpaths:
        data = pyc_bytes((stage / rel).read_bytes(), run_root / rel)
        if data is None:
            continue
        dest = stage / pyc_relpath(rel)
        dest.parent.mkdir(exist_ok=True)
        dest.write_bytes(data)
        os.chmod(dest, 0o644)
        done.append(rel)
    return done


def with_bytecode(overrides: dict[str, bytes | None], compiled: list[str], run_root: Path) -> dict[str, bytes | None]:
    """A variant's overrides plus the pyc of each changed module that the stage holds bytecode for (None
    when the variant deletes the module or it no longer compiles: the run then compiles it itself)."""
    out = dict(overrides)
    for rel, data in overrides.items():
        if rel in compiled:
            out[pyc_relpath(rel)] = None if data is None else pyc_bytes(data, run_root / rel)
    return out

"""Which memory-primitive extension modules (ctypes, cffi) a project needs when it is imported, and
which raw-address libraries (numpy) it brings along.

A graded run never maps `_ctypes` or `_cffi_backend` (`verifier_native.MEMORY_PRIMITIVES`): through
them a submission reads and writes raw memory with no audit event. Some libraries import them at import
time (pandas, scipy, sympy and torch import ctypes), and for those the task's runs must map them, or the
target would not import at all. This finds out, once per environment, by importing the project's
top-level modules in the sandbox, and the suite's conftest.py files (every graded run loads those on the
submission's path: urllib3's imports trustme, hence cryptography and cffi), and looking at what got loaded; the task's verifier config records it
(`native_exposed`) and the reward details then say the grading is exposed. numpy is recorded the same
way (its arrays take raw addresses) but never refused.
"""

from __future__ import annotations

import json
from pathlib import Path

from repo2rlenv.verifiers.test_synthesis.verifier_native import MEMORY_PRIMITIVES, RAW_ADDRESS_LIBRARIES

WATCHED = (*MEMORY_PRIMITIVES, *RAW_ADDRESS_LIBRARIES)

# Imports each named module, then runs each conftest file as pytest would find it (its folder first on the
# path; failures and exits are ignored: the project's own suite decides whether it imports), then prints the
# watched names that are loaded.
_PROBE = """\
import importlib, importlib.util, json, os, sys
names, watch, roots = json.loads(sys.argv[1]), json.loads(sys.argv[2]), json.loads(sys.argv[3])
conftests = json.loads(sys.argv[4]) if len(sys.argv) > 4 else []
sys.path[:0] = [os.path.join(os.getcwd(), r) for r in roots]
for name in names:
    try:
        importlib.import_module(name)
    except BaseException:
        pass
for i, rel in enumerate(conftests):
    path = os.path.join(os.getcwd(), rel)
    sys.path.insert(0, os.path.dirname(path))
    try:
        spec = importlib.util.spec_from_file_location("r2e_conftest_%d" % i, path)
        spec.loader.exec_module(importlib.util.module_from_spec(spec))
    except BaseException:
        pass
print("R2E-NATIVE " + json.dumps(sorted(w for w in watch if w in sys.modules)))
"""
# How deep conftest files are looked for (`src/pkg/tests/conftest.py` is four levels down).
CONFTEST_DEPTH = 4
_NOT_PROJECT = {"test", "tests", "testing", "docs", "doc", "examples", "example", "benchmarks", "bench",
                "scripts", "tools", "build", "dist", "setup", "conftest", "noxfile", "tasks", "fabfile"}
PROBE_TIMEOUT_SEC = 180


def top_level_modules(tree: Path, import_roots: list[str]) -> list[str]:
    """The project's importable top-level names beneath its import roots: packages (dirs with an
    `__init__.py`) and modules, minus tests, docs and build scripts."""
    names: set[str] = set()
    for root in import_roots or [""]:
        base = tree / root
        if not base.is_dir():
            continue
        for entry in base.iterdir():
            stem = entry.name[:-3] if entry.name.endswith(".py") else entry.name
            if not stem.isidentifier() or stem in _NOT_PROJECT or stem.startswith(("test_", "_")):
                continue
            if (entry.is_dir() and (entry / "__init__.py").is_file()) or (entry.is_file() and entry.suffix == ".py"):
                names.add(stem)
    return sorted(names)


def conftest_files(tree: Path) -> list[str]:
    """The tree's conftest.py files (relative, shallowest first), outside hidden, build and virtualenv folders."""
    found = []
    for path in tree.rglob("conftest.py"):
        rel = path.relative_to(tree)
        if len(rel.parts) <= CONFTEST_DEPTH and not any(
                p.startswith(".") or p in {"build", "dist", "node_modules", "venv", "site-packages"} for p in rel.parts[:-1]):
            found.append(rel.as_posix())
    return sorted(found, key=lambda r: (r.count("/"), r))


def session_native_needs(session, tree: Path, import_roots: list[str]) -> list[str]:
    """The memory primitives importing the project and loading its conftest files loads in the sandbox
    `session` (its cwd is the project's tree); [] when none, when nothing imports, or when the probe fails."""
    names = top_level_modules(tree, import_roots)
    conftests = conftest_files(tree)
    if not names and not conftests:
        return []
    argv = [session.python, "-c", _PROBE, json.dumps(names), json.dumps(sorted(WATCHED)),
            json.dumps(list(import_roots)), json.dumps(conftests)]
    res = session.exec(argv, timeout=PROBE_TIMEOUT_SEC)
    for line in reversed((res.stdout or "").splitlines()):
        if line.startswith("R2E-NATIVE "):
            try:
                found = json.loads(line[len("R2E-NATIVE "):])
            except ValueError:
                return []
            return [n for n in found if n in WATCHED]
    return []

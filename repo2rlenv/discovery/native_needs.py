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
from dataclasses import dataclass, field
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


# --- what a graded run would refuse to map ----------------------------------------------------------------------

# Imports one module in a fresh interpreter — a pytest plugin by its entry-point name (what `-p NAME` loads), or a
# module of the project — and judges every extension module then loaded by the graded runs' own rule
# (`verifier_native.classify`, whose source comes in argv[1]: the files are the image's, so they are read there).
# The modules in argv[7] are blocked first (their import raises ImportError), as in a graded run that refuses them.
# A graded run maps only the allowed ones before its barrier; one that is refused fails to map after it
# ("failed to map segment"): a plugin's import then aborts every run's pytest start (jaraco.vcs.fixtures imports
# ctypes: issue 34, every jsonpickle task "crashed" on A), a target's import loses the library (gmpy2).
_REFUSED_PROBE = """\
import importlib, json, os, sys
src, kind, name = sys.argv[1], sys.argv[2], sys.argv[3]
roots, expose, watch = json.loads(sys.argv[4]), json.loads(sys.argv[5]), json.loads(sys.argv[6])
for blocked in json.loads(sys.argv[7]):  # as a graded run sees a module it cannot map: an ImportError
    sys.modules[blocked] = None
native = {"__name__": "r2e_verifier_native"}
exec(compile(src, "verifier_native.py", "exec"), native)
sys.path[:0] = [os.path.join(os.getcwd(), r) for r in roots]
error = ""
try:
    if kind == "plugin":
        import importlib.metadata as m
        eps = [e for e in m.entry_points(group="pytest11") if e.name == name]
        eps[0].load() if eps else importlib.import_module(name)
    else:
        importlib.import_module(name)
except BaseException as exc:
    error = ("%s: %s" % (type(exc).__name__, exc))[:300]
ends, stdlib = native["suffixes"](), native["stdlib_dirs"]()
refused = {}
for mod_name, mod in sorted(sys.modules.items()):
    path = getattr(mod, "__file__", None)
    if isinstance(path, str) and path.endswith(ends):
        verdict, why = native["classify"](path, stdlib, ends, expose)
        if verdict != "allowed":
            refused[mod_name] = why
print("R2E-REFUSED " + json.dumps({"refused": refused, "watched": sorted(w for w in watch if w in sys.modules),
                                   "error": error}))
"""


@dataclass(frozen=True)
class ImportNeeds:
    """What importing one module loads that matters to a graded run: the extension modules the native
    allowlist refuses ({module: why}; a memory primitive counts unless exposed), the watched modules
    (`WATCHED`: memory primitives and raw-address libraries) it loads, and its import error, if any."""

    refused: dict[str, str] = field(default_factory=dict)
    watched: tuple[str, ...] = ()
    error: str = ""

    def why(self) -> str:
        """One line: which refused modules, and why each (the first three)."""
        return "; ".join(f"{name} ({why})" for name, why in sorted(self.refused.items())[:3])


def session_import_needs(session, name: str, *, kind: str, import_roots: list[str],
                         expose: list[str] | tuple[str, ...] = (),
                         blocked: list[str] | tuple[str, ...] = ()) -> ImportNeeds | None:
    """`ImportNeeds` of importing `name` (`kind`: "plugin", an entry-point name of group pytest11 as graded runs
    load it with -p, or "module") in the sandbox `session` (its cwd is the project's tree), with the modules
    `blocked` unimportable; None when the probe itself fails (no verdict: the caller keeps what it had)."""
    from repo2rlenv.verifiers.test_synthesis import verifier_native

    source = Path(verifier_native.__file__).read_text()
    argv = [session.python, "-c", _REFUSED_PROBE, source, kind, name, json.dumps(list(import_roots)),
            json.dumps(sorted(expose)), json.dumps(sorted(WATCHED)), json.dumps(sorted(blocked))]
    res = session.exec(argv, timeout=PROBE_TIMEOUT_SEC)
    for line in reversed((res.stdout or "").splitlines()):
        if line.startswith("R2E-REFUSED "):
            try:
                data = json.loads(line[len("R2E-REFUSED "):])
                return ImportNeeds(refused={str(k): str(v) for k, v in data["refused"].items()},
                                   watched=tuple(w for w in data["watched"] if w in WATCHED),
                                   error=str(data.get("error") or ""))
            except (ValueError, KeyError, TypeError, AttributeError):
                return None
    return None


def session_plugin_refusals(session, plugins: list[str], import_roots: list[str],
                            expose: list[str] | tuple[str, ...] = ()) -> dict[str, str]:
    """{plugin: why} of the graded plugins whose import loads an extension module graded runs refuse (a memory
    primitive the project's own import does not expose, or a module the allowlist refuses). Such a plugin cannot
    load under the barrier, and `-p` aborts pytest's start on it: every graded run would crash on A. They are
    left out of graded runs (the suite's fixtures from them are then missing, which only a test using them notices)."""
    out: dict[str, str] = {}
    for name in plugins:
        needs = session_import_needs(session, name, kind="plugin", import_roots=import_roots, expose=expose)
        if needs is not None and needs.refused:
            out[name] = f"its import loads what graded runs refuse: {needs.why()}"
    return out


@dataclass(frozen=True)
class TargetNeeds:
    """What a task's target module needs at import beyond what graded runs map: `refused` ({module: why}, a
    module the allowlist refuses without which the import fails: no task of this module can grade) and
    `exposed` (memory primitives without which the import fails: the task maps them; and the raw-address
    libraries it loads, never refused but recorded the same way: docs/integrity.md)."""

    refused: dict[str, str] = field(default_factory=dict)
    exposed: tuple[str, ...] = ()

    def why(self) -> str:
        return "; ".join(f"{name} ({why})" for name, why in sorted(self.refused.items())[:3])


def session_target_needs(session, module: str, import_roots: list[str],
                         exposed: list[str] | tuple[str, ...] = ()) -> TargetNeeds:
    """`TargetNeeds` of the project module `module` in the sandbox `session`. A module is needed when the import
    fails with it blocked, not merely because the import loads it (numpy imports ctypes but does without it):
    nothing is exposed, and nothing dropped, that graded runs can do without. Probes only as far as it must (one
    import when nothing refused is loaded); an unknown verdict needs nothing (validation still decides)."""
    primitives = tuple(MEMORY_PRIMITIVES)
    kw = {"kind": "module", "import_roots": import_roots}
    first = session_import_needs(session, module, expose=primitives, **kw)
    if first is None or first.error:
        return TargetNeeds()  # it does not import even here: the gates and the oracle decide
    other = {name: why for name, why in first.refused.items() if name not in primitives}
    unmapped = [w for w in first.watched if w in primitives and w not in exposed]
    raw = [w for w in first.watched if w in RAW_ADDRESS_LIBRARIES and w not in exposed]
    if other:
        without = session_import_needs(session, module, expose=primitives, blocked=sorted(other), **kw)
        if without is not None and without.error:
            return TargetNeeds(refused=other)
    needed: list[str] = []
    if unmapped:
        without = session_import_needs(session, module, expose=primitives, blocked=sorted([*other, *unmapped]), **kw)
        if without is not None and without.error:
            needed = unmapped
    return TargetNeeds(exposed=tuple(sorted({*needed, *raw})))


def graded_plugins_under_barrier(session, import_roots: list[str],
                                 exposed: list[str] | tuple[str, ...] = ()) -> tuple[list[str], dict[str, str]]:
    """The image's graded plugins (`pytest_setup.session_graded_plugins`) that can load under a graded run's
    barrier, and {plugin: why} of those left out (`session_plugin_refusals`)."""
    from repo2rlenv.discovery.pytest_setup import session_graded_plugins

    plugins = session_graded_plugins(session)
    left_out = session_plugin_refusals(session, plugins, import_roots, exposed)
    return [p for p in plugins if p not in left_out], left_out

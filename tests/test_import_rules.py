"""The package's import rules (docs/architecture.md), read from the source: which room may import which.

Imports are read with `ast` from every module, those inside functions included (a lazy import is still
a dependency of the room), relative ones resolved. The rules are a table: adding a room or a rule is a
row, and each row says why it holds.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import repo2rlenv

PACKAGE_DIR = Path(repo2rlenv.__file__).parent
PACKAGE = "repo2rlenv"


@dataclass(frozen=True)
class Rule:
    """Modules under any of `rooms` import nothing under any of `forbidden` (prefixes of dotted names)."""

    rooms: tuple[str, ...]
    forbidden: tuple[str, ...]
    why: str
    exempt: tuple[str, ...] = ()


def _under(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


_P = PACKAGE + "."
# The test_synthesis pipeline's stage folders, in the order a candidate meets them.
_TS = _P + "pipelines.test_synthesis."
STAGES = ("mine", "gate", "oracle", "emit")


def _stage_rules() -> list[Rule]:
    return [Rule(rooms=(_TS + stage,), forbidden=tuple(_TS + other for other in STAGES if other != stage),
                 why="a stage folder never imports another: what two stages share is a record or tool at the top "
                     "of test_synthesis/ (candidates.py, trials.py), and only the drivers there call one stage "
                     "after another")
            for stage in STAGES]


RULES = [
    Rule(rooms=(_P + "solver", _P + "hub", _P + "eval", _P + "verifiers", _P + "dataset", _P + "pysource",
                _P + "scoring", _P + "audit"),
         forbidden=(_P + "pipelines",),
         why="the solver, the Hub, eval, scoring, the audit and the verifier work on any task directory, whatever "
             "pipeline made it: "
             "what they share with the pipeline lives in the neutral rooms (dataset/, pysource/)"),
    Rule(rooms=(_P + "dataset", _P + "pysource"),
         forbidden=(_P + "solver", _P + "hub", _P + "eval", _P + "scoring", _P + "audit", _P + "cli"),
         why="the neutral rooms are imported by those rooms, never the other way round"),
    Rule(rooms=(PACKAGE,), forbidden=(_P + "cli",), exempt=(_P + "cli", _P + "__main__"),
         why="the command line sits on top: no room calls back into it"),
    Rule(rooms=(PACKAGE,), forbidden=("click",), exempt=(_P + "cli",),
         why="only cli/ knows click: the rooms raise the package's errors and cli/guard.py turns them into "
             "one line and an exit code"),
    *_stage_rules(),
]


def _modules(root: Path = PACKAGE_DIR, package: str = PACKAGE) -> dict[str, Path]:
    """Dotted name → file of every module of the package (a package is its __init__.py)."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = (package, *path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _imports(name: str, path: Path) -> set[str]:
    """Every dotted name `path` imports (for `from a import b`: both `a` and `a.b`), relative ones resolved."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names}
    return found


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module → the package's modules it imports."""
    return {name: {m for m in _imports(name, path) if m in modules and m != name} for name, path in modules.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle of `graph` as [a, b, ..., a], or [] when there is none (iterative DFS)."""
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    for start in sorted(graph):
        if start in state:
            continue
        path, stack = [start], [iter(sorted(graph[start]))]
        state[start] = 1
        while stack:
            step = next(stack[-1], None)
            if step is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(step) == 1:
                return path[path.index(step):] + [step]
            elif step not in state:
                state[step] = 1
                path.append(step)
                stack.append(iter(sorted(graph[step])))
    return []


def violations(modules: dict[str, Path], rules: list[Rule] = RULES) -> list[str]:
    """`importer -> imported (why)` for every import a rule forbids."""
    out = []
    for name, path in modules.items():
        imported = _imports(name, path)
        for rule in rules:
            if not _under(name, rule.rooms) or _under(name, rule.exempt):
                continue
            out += [f"{name} -> {target} ({rule.why})" for target in sorted(imported) if _under(target, rule.forbidden)]
    return out


def payload_packages(modules: dict[str, Path]) -> dict[str, str]:
    """Payload folders (copied whole into a sandbox or a task, see `payload.py`), found as the values of
    the package's module-level `*_PACKAGE` string constants: name → the module declaring it."""
    out = {}
    for name, path in modules.items():
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                    and node.targets[0].id.endswith("_PACKAGE") and isinstance(node.value, ast.Constant)
                    and isinstance(node.value.value, str) and node.value.value.startswith(_P)):
                out[node.value.value] = name
    return out


# What a payload may import besides the standard library and its own folder: the test runner that is
# there wherever a payload runs (the task image and every sandbox install pytest and coverage).
# _r2e_kernel: the base images' kernel extension, imported by the verifier when present (ctypes otherwise).
_PAYLOAD_THIRD_PARTY = frozenset({"pytest", "_pytest", "coverage", "_r2e_kernel"})


def payload_violations(modules: dict[str, Path], folder: str) -> list[str]:
    """Imports of a payload folder's modules that would fail once the folder is copied alone."""
    inside = {n: p for n, p in modules.items() if _under(n, (folder,))}
    siblings = {p.stem for p in inside.values()}
    out = []
    for name, path in inside.items():
        for target in sorted(_imports(name, path)):
            top = target.split(".")[0]
            if _under(target, (folder,)) or top in siblings or top in sys.stdlib_module_names \
                    or top in _PAYLOAD_THIRD_PARTY or top == "__future__":
                continue
            out.append(f"{name} -> {target}")
    return out


MODULES = _modules()


def test_the_package_has_no_import_cycle():
    cycle = find_cycle(import_graph(MODULES))
    assert not cycle, "an import cycle: " + " -> ".join(cycle)


def test_no_room_imports_what_its_rules_forbid():
    found = violations(MODULES)
    assert not found, "forbidden imports:\n" + "\n".join(found)


def test_the_payload_folders_are_found():
    # Five are shipped today; a new one declared with a *_PACKAGE constant joins the checks below.
    assert set(payload_packages(MODULES)) >= {
        _P + "verifiers.test_synthesis", _P + "pipelines.test_synthesis.gate.worker",
        _P + "pipelines.test_synthesis.oracle.differential.probe", _P + "baseline.r2e_plugin", _P + "audit.image_probe"}


@pytest.mark.parametrize("folder", sorted(payload_packages(MODULES)))
def test_a_payload_folder_imports_only_the_stdlib_pytest_and_its_siblings(folder):
    found = payload_violations(MODULES, folder)
    assert not found, f"{folder} is copied alone into a sandbox or task, where these fail:\n" + "\n".join(found)


# --- the checks themselves fail on a planted violation ------------------------------------------------


def _plant(tmp_path: Path, files: dict[str, str]) -> dict[str, Path]:
    root = tmp_path / PACKAGE
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return _modules(root)


def test_a_planted_cycle_is_found_even_through_a_lazy_relative_import(tmp_path):
    mods = _plant(tmp_path, {"__init__.py": "", "a.py": "from repo2rlenv import b\n",
                             "b.py": "def f():\n    from . import a\n", "c.py": "import repo2rlenv.a\n"})
    assert find_cycle(import_graph(mods)) == ["repo2rlenv.a", "repo2rlenv.b", "repo2rlenv.a"]


def test_a_planted_forbidden_import_is_named_with_its_rule(tmp_path):
    mods = _plant(tmp_path, {"__init__.py": "", "solver/__init__.py": "", "pipelines/__init__.py": "",
                             "pipelines/x.py": "", "solver/s.py": "def f():\n    from ..pipelines import x\n",
                             "hub/__init__.py": "import click\n", "cli/__init__.py": "import click\n"})
    found = violations(mods)
    assert [v.split(" (")[0] for v in found] == ["repo2rlenv.hub -> click", "repo2rlenv.solver.s -> repo2rlenv.pipelines",
                                                 "repo2rlenv.solver.s -> repo2rlenv.pipelines.x"]


def test_a_planted_payload_import_of_the_package_is_named(tmp_path):
    mods = _plant(tmp_path, {"__init__.py": "", "w/__init__.py": "", "w/w_main.py": "import w_util\nimport json\n",
                             "w/w_util.py": "from repo2rlenv import errors\nimport pydantic\n", "errors.py": ""})
    assert payload_violations(mods, "repo2rlenv.w") == ["repo2rlenv.w.w_util -> pydantic",
                                                         "repo2rlenv.w.w_util -> repo2rlenv",
                                                         "repo2rlenv.w.w_util -> repo2rlenv.errors"]


def test_a_planted_import_between_stage_folders_is_named(tmp_path):
    ts = "pipelines/test_synthesis/"
    mods = _plant(tmp_path, {"__init__.py": "", "pipelines/__init__.py": "", ts + "__init__.py": "",
                             ts + "candidates.py": "", ts + "driver.py": "from .gate import g\nfrom .emit import e\n",
                             ts + "gate/__init__.py": "", ts + "gate/g.py": "from ..candidates import x\n",
                             ts + "emit/__init__.py": "", ts + "emit/e.py": "def f():\n    from ..oracle import o\n",
                             ts + "oracle/__init__.py": "", ts + "oracle/o.py": ""})
    found = [v.split(" (")[0] for v in violations(mods)]
    assert found == ["repo2rlenv.pipelines.test_synthesis.emit.e -> repo2rlenv.pipelines.test_synthesis.oracle",
                     "repo2rlenv.pipelines.test_synthesis.emit.e -> repo2rlenv.pipelines.test_synthesis.oracle.o"]

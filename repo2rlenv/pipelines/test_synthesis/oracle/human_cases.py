"""The test cases a real change added or edited, and a test file cut down to some of them.

Pure source work for the human oracle (`human.py`): no runs. A case is what pytest collects by default
from a test file: a module-level function named ``test*``, or a ``test*`` method of a class that is a test
class (named ``Test*``, or holding ``test*`` methods, as a ``unittest.TestCase`` may be named anything).
A case is the change's own when the parent's version of the file lacks it or holds a different one (the
AST is compared, so a reformatted case is not "edited").

A file cut down to some cases keeps everything else of the module as the developers wrote it — imports,
helpers, constants, fixtures, a class's non-test methods — because the cases need them and nothing
tells which; the cases left out are removed with their decorators, and a test class left without a case
goes whole unless a kept class inherits from it (then only its cases go).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass(frozen=True, slots=True)
class Case:
    """One test case of a file: `name` as pytest's node id spells it after the file (``TestX::test_y``)."""

    name: str
    start: int  # first line, decorators included
    end: int


def _start(node: ast.stmt) -> int:
    return min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])


def _is_test_class(node: ast.ClassDef) -> bool:
    return node.name.startswith("Test") or any(
        isinstance(n, _DEFS) and n.name.startswith("test") for n in node.body)


def _cases(tree: ast.Module) -> dict[str, tuple[Case, ast.stmt]]:
    found: dict[str, tuple[Case, ast.stmt]] = {}
    for node in tree.body:
        if isinstance(node, _DEFS) and node.name.startswith("test"):
            found[node.name] = (Case(node.name, _start(node), node.end_lineno or node.lineno), node)
        elif isinstance(node, ast.ClassDef) and _is_test_class(node):
            for child in node.body:
                if isinstance(child, _DEFS) and child.name.startswith("test"):
                    name = f"{node.name}::{child.name}"
                    found[name] = (Case(name, _start(child), child.end_lineno or child.lineno), child)
    return found


def all_cases(source: str) -> list[Case]:
    """Every case of `source`, in file order (empty when it does not parse)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return []
    return [case for case, _ in _cases(tree).values()]


def changed_cases(before: str | None, after: str) -> list[str]:
    """Names of the cases of `after` that `before` (the parent's file, None when it had none) lacks or
    holds differently, in file order."""
    try:
        new = _cases(ast.parse(after))
        old = _cases(ast.parse(before)) if before is not None else {}
    except (SyntaxError, ValueError, RecursionError):
        return []
    return [name for name, (_, node) in new.items()
            if name not in old or ast.dump(old[name][1]) != ast.dump(node)]


def _bases_needed(tree: ast.Module, keep: set[str]) -> set[str]:
    """Test classes of the module that a class keeping a case inherits from, directly or not."""
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    frontier = [name for name in classes if any(k.startswith(f"{name}::") for k in keep)]
    needed: set[str] = set()
    while frontier:
        for base in classes[frontier.pop()].bases:
            if isinstance(base, ast.Name) and base.id in classes and base.id not in needed:
                needed.add(base.id)
                frontier.append(base.id)
    return needed


def keep_only(source: str, keep: set[str]) -> str:
    """`source` with every case not in `keep` removed, and each test class that keeps no case removed —
    unless a kept class inherits from it: then it stays without its own cases (which the subclass would
    otherwise inherit and run), with `pass` when nothing else is left in it."""
    tree = ast.parse(source)
    lines = source.split("\n")
    bases = _bases_needed(tree, keep)
    drop: list[tuple[int, int]] = []
    replace: dict[int, str] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and _is_test_class(node):
            tests = [c for c in node.body if isinstance(c, _DEFS) and c.name.startswith("test")]
            kept = [c for c in tests if f"{node.name}::{c.name}" in keep]
            if not kept and node.name not in bases:
                drop.append((_start(node), node.end_lineno or node.lineno))
                continue
            drop += [(_start(c), c.end_lineno or c.lineno) for c in tests if c not in kept]
            if len(tests) == len(node.body) and not kept:
                first = tests[0]
                replace[_start(first)] = " " * first.col_offset + "pass"
        elif isinstance(node, _DEFS) and node.name.startswith("test") and node.name not in keep:
            drop.append((_start(node), node.end_lineno or node.lineno))
    gone = {n for start, end in drop for n in range(start, end + 1)}
    text = "\n".join(replace.get(number, line) for number, line in enumerate(lines, 1)
                     if number not in gone or number in replace)
    # Removing cases leaves runs of blank lines; three or more become two, as a formatter would.
    while "\n\n\n\n" in text:
        text = text.replace("\n\n\n\n", "\n\n\n")
    return text.rstrip("\n") + "\n"


def case_of(nodeid: str) -> str:
    """`tests/test_x.py::TestA::test_b[1]` → `TestA::test_b` (the case a collected item belongs to)."""
    return nodeid.split("::", 1)[-1].split("[", 1)[0]

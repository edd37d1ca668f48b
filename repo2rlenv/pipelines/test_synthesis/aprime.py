"""A′: a behaviour-preserving rewrite of the target module, graded next to A.

A test that pins the module's source (its text, a hash of it, its line layout) passes on A and fails on
B without testing anything. The verifier therefore also requires each case to pass on A′, the same
module rewritten so its text differs while its behaviour does not:

- level 0: identity;
- level 1: comments dropped (the shebang and an encoding declaration stay) and blank lines normalised
  (two before and after top-level definitions, one between methods, none elsewhere);
- level 2: level 1, plus the locals of every function renamed, bracketed and backslash continuation
  lines joined, and indentation set to four spaces.

Parameters are never renamed (callers may pass them by keyword), nor names declared `global`/`nonlocal`,
imported names, nested definitions, dunder or private (`__x`) names. A function is left alone when it
uses `locals()`, `vars()`, `dir()`, `eval`, `exec`, frames, an f-string `=` debug field or a `match`
statement. Docstrings stay (tests may read `__doc__`).

Every rewrite is checked before it is returned: it compiles, its AST equals A's once the renames are
undone, and every code object has the same instructions (no-ops aside) with the same global, attribute,
local, cell and free names modulo the renames. A failed check raises `APrimeError`; the emitter then falls
back to a lower level.
"""

from __future__ import annotations

import ast
import dis
import functools
import re
import types

import libcst as cst
from libcst.metadata import FunctionScope, MetadataWrapper, PositionProvider, ScopeProvider

from repo2rlenv.errors import Repo2RLEnvError
from repo2rlenv.verifiers.test_synthesis.verifier_patch import make_diff

LEVELS = (0, 1, 2)
_CODING = re.compile(r"^[ \t\f]*#.*?coding[:=][ \t]*[-\w.]+")
# A function using any of these can observe its locals by name: its locals keep their names.
_INTROSPECTING_CALLS = frozenset({"locals", "vars", "dir", "eval", "exec"})
_INTROSPECTING_ATTRS = frozenset({"_getframe", "currentframe", "f_locals", "f_back", "stack", "trace",
                                  "co_varnames", "__code__"})


class APrimeError(Repo2RLEnvError):
    """No behaviour-preserving rewrite at the requested level (parse, compile or equivalence check failed)."""


# --------------------------------------------------------------------------- level 1: comments, blank lines

class _Layout(cst.CSTTransformer):
    """Drop comments and blank lines everywhere, then put back a normalised number of blank lines."""

    def leave_EmptyLine(self, original_node: cst.EmptyLine, updated_node: cst.EmptyLine):
        return cst.RemoveFromParent()

    def leave_TrailingWhitespace(self, original_node, updated_node: cst.TrailingWhitespace):
        return updated_node.with_changes(whitespace=cst.SimpleWhitespace(""), comment=None)

    def leave_ClassDef(self, original_node, updated_node: cst.ClassDef) -> cst.ClassDef:
        if not isinstance(updated_node.body, cst.IndentedBlock):
            return updated_node
        body = [stmt.with_changes(leading_lines=[cst.EmptyLine(indent=False)] if i and _is_def(stmt) else [])
                for i, stmt in enumerate(updated_node.body.body)]
        return updated_node.with_changes(body=updated_node.body.with_changes(body=body))

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        header = [line for i, line in enumerate(original_node.header) if line.comment is not None and (
            (i == 0 and line.comment.value.startswith("#!")) or (i < 2 and _CODING.match(line.comment.value)))]
        body = list(updated_node.body)
        spaced = [stmt.with_changes(leading_lines=[cst.EmptyLine(indent=False)] * 2
                                    if i and (_is_def(stmt) or _is_def(body[i - 1])) else [])
                  for i, stmt in enumerate(body)]
        return updated_node.with_changes(header=header, body=spaced, footer=[])


def _is_def(stmt: cst.CSTNode) -> bool:
    return isinstance(stmt, (cst.FunctionDef, cst.ClassDef))


# --------------------------------------------------------------------------- level 2: layout

class _Reflow(cst.CSTTransformer):
    """Join continuation lines (inside brackets and after backslashes) and use four-space indentation."""

    def leave_ParenthesizedWhitespace(self, original_node, updated_node):
        return cst.SimpleWhitespace(" ")

    def leave_SimpleWhitespace(self, original_node, updated_node: cst.SimpleWhitespace):
        return cst.SimpleWhitespace(" ") if "\\" in updated_node.value else updated_node

    def leave_IndentedBlock(self, original_node, updated_node: cst.IndentedBlock) -> cst.IndentedBlock:
        return updated_node.with_changes(indent=None)

    def leave_Module(self, original_node, updated_node: cst.Module) -> cst.Module:
        return updated_node.with_changes(default_indent="    ")


# --------------------------------------------------------------------------- level 2: renaming locals

class _Collect(cst.CSTVisitor):
    """Every identifier in the module: fresh names must collide with none of them."""

    def __init__(self) -> None:
        self.identifiers: set[str] = set()

    def visit_Name(self, node: cst.Name) -> None:
        self.identifiers.add(node.value)


def _function_is_introspective(fn: cst.CSTNode) -> bool:
    found = False

    class Probe(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            nonlocal found
            if isinstance(node.func, cst.Name) and node.func.value in _INTROSPECTING_CALLS:
                found = True

        def visit_Attribute(self, node: cst.Attribute) -> None:
            nonlocal found
            if node.attr.value in _INTROSPECTING_ATTRS:
                found = True

        def visit_FormattedStringExpression(self, node: cst.FormattedStringExpression) -> None:
            nonlocal found
            if node.equal is not None:
                found = True

        def visit_Match(self, node: cst.Match) -> None:
            nonlocal found
            found = True

    fn.visit(Probe())
    return found


def _declared_names(fn: cst.CSTNode) -> set[str]:
    names: set[str] = set()

    class Probe(cst.CSTVisitor):
        def visit_Global(self, node: cst.Global) -> None:
            names.update(item.name.value for item in node.names)

        def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
            names.update(item.name.value for item in node.names)

    fn.visit(Probe())
    return names


class _Rename(cst.CSTTransformer):
    def __init__(self, targets: dict[int, str]) -> None:
        self.targets = targets

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        new = self.targets.get(id(original_node))
        return updated_node.with_changes(value=new) if new else updated_node


def _rename_locals(module: cst.Module) -> tuple[cst.Module, dict[str, str]]:
    """Rename function locals to fresh names; returns the module and {new name: old name}."""
    wrapper = MetadataWrapper(module)
    scopes = wrapper.resolve(ScopeProvider)
    positions = wrapper.resolve(PositionProvider)
    collector = _Collect()
    wrapper.module.visit(collector)
    taken = set(collector.identifiers)
    targets: dict[int, str] = {}
    inverse: dict[str, str] = {}
    counter = 0
    function_scopes = {s for s in scopes.values() if isinstance(s, FunctionScope)}
    for scope in sorted(function_scopes, key=lambda s: (positions[s.node].start.line, positions[s.node].start.column)):
        fn = scope.node
        if not isinstance(fn, cst.FunctionDef) or _function_is_introspective(fn):
            continue
        declared = _declared_names(fn)
        for name in sorted({a.name for a in scope.assignments}):
            if name in declared or name.startswith("__"):
                continue
            assigns = [a for a in scope.assignments[name] if a.scope is scope]
            if not assigns or any(type(a.node) is not cst.Name for a in assigns):
                continue  # parameters, imports, nested defs/classes keep their names
            refs = {r for a in assigns for r in a.references}
            if any(not isinstance(r.node, cst.Name) or not set(r.referents) <= set(assigns) for r in refs):
                continue
            if any(not isinstance(acc.node, cst.Name) for acc in scope.accesses[name]):
                continue
            counter += 1
            while f"_v{counter}" in taken:
                counter += 1
            new = f"_v{counter}"
            taken.add(new)
            inverse[new] = name
            for node in [a.node for a in assigns] + [r.node for r in refs]:
                targets[id(node)] = new
    return wrapper.module.visit(_Rename(targets)), inverse


# --------------------------------------------------------------------------- equivalence check

class _Unrename(ast.NodeTransformer):
    def __init__(self, inverse: dict[str, str]) -> None:
        self.inverse = inverse

    def generic_visit(self, node: ast.AST) -> ast.AST:
        for attr in ("id", "name", "rest"):
            value = getattr(node, attr, None)
            if isinstance(value, str) and value in self.inverse and not isinstance(
                    node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                setattr(node, attr, self.inverse[value])
        return super().generic_visit(node)


def _instructions(code: types.CodeType, inverse: dict[str, str]) -> list[tuple[str, object]]:
    out: list[tuple[str, object]] = []
    for ins in dis.get_instructions(code):
        if ins.opname == "NOP":  # kept or dropped depending on line numbers only
            continue
        if ins.opcode in dis.hasjrel or ins.opcode in dis.hasjabs:
            out.append((ins.opname, None))  # targets move with no-ops; the AST check covers structure
        elif isinstance(ins.argval, types.CodeType):
            out.append((ins.opname, ins.argval.co_qualname))
        elif isinstance(ins.argval, str) and ins.opcode in dis.haslocal + dis.hasfree:
            out.append((ins.opname, inverse.get(ins.argval, ins.argval)))
        else:
            out.append((ins.opname, repr(ins.argval)))
    return out


def _same_code(old: types.CodeType, new: types.CodeType, inverse: dict[str, str]) -> str | None:
    """None when `new` is `old` modulo renames and line numbers; else what differs."""
    unmap = lambda names: tuple(inverse.get(n, n) for n in names)  # noqa: E731
    checks = {
        "names": (old.co_names, new.co_names), "flags": (old.co_flags, new.co_flags),
        "varnames": (old.co_varnames, unmap(new.co_varnames)),
        "cellvars": (old.co_cellvars, unmap(new.co_cellvars)),
        "freevars": (old.co_freevars, unmap(new.co_freevars)),
        "instructions": (_instructions(old, {}), _instructions(new, inverse)),
    }
    for what, (a, b) in checks.items():
        if a != b:
            return f"{old.co_qualname}: {what} differ"
    old_codes = [c for c in old.co_consts if isinstance(c, types.CodeType)]
    new_codes = [c for c in new.co_consts if isinstance(c, types.CodeType)]
    if len(old_codes) != len(new_codes):
        return f"{old.co_qualname}: nested code objects differ"
    for a, b in zip(old_codes, new_codes):
        problem = _same_code(a, b, inverse)
        if problem:
            return problem
    return None


def check_equivalent(original: str, rewritten: str, inverse: dict[str, str]) -> None:
    """Raise APrimeError unless `rewritten` is `original` modulo the renames {new: old} and layout."""
    try:
        new_tree = ast.parse(rewritten)
        new_code = compile(rewritten, "<aprime>", "exec")
    except (SyntaxError, ValueError) as exc:
        raise APrimeError(f"rewrite does not compile: {exc}") from exc
    old_tree = ast.parse(original)
    if ast.dump(old_tree) != ast.dump(_Unrename(inverse).visit(new_tree)):
        raise APrimeError("rewrite changes the AST beyond renaming locals")
    problem = _same_code(compile(original, "<aprime>", "exec"), new_code, inverse)
    if problem:
        raise APrimeError(f"rewrite changes compiled code: {problem}")


# --------------------------------------------------------------------------- API

def rewrite(source: str, *, level: int = 2) -> tuple[str, dict[str, str]]:
    """(A′ text, {new local name: old name}) for `source` at `level`; checked for equivalence."""
    if level not in LEVELS:
        raise ValueError(f"aprime level must be one of {LEVELS}, got {level}")
    if level == 0:
        return source, {}
    text, inverse, error = _rewrite_once(source, level)
    if error is not None:
        raise APrimeError(error)
    return text, dict(inverse)


# Every candidate of a module asks for the same rewrite of the same file; libcst takes seconds on a big
# one (more-itertools' 170 KB more.py: ~2 s a level), so the run does each (source, level) once.
@functools.lru_cache(maxsize=8)
def _rewrite_once(source: str, level: int) -> tuple[str, tuple[tuple[str, str], ...], str | None]:
    """(text, inverse renames, None), or ('', (), why not) when there is no rewrite at `level`."""
    try:
        module = cst.parse_module(source)
        compile(source, "<A>", "exec")
    except (cst.ParserSyntaxError, SyntaxError, ValueError) as exc:
        return "", (), f"source does not parse: {exc}"
    inverse: dict[str, str] = {}
    if level >= 2:
        module, inverse = _rename_locals(module.visit(_Reflow()))
    module = module.visit(_Layout())
    text = module.code
    try:
        check_equivalent(source, text, inverse)
    except APrimeError as exc:
        return "", (), str(exc)
    return text, tuple(sorted(inverse.items())), None


def make_aprime(source: str, *, level: int = 2) -> str:
    """A behaviour-preserving rewrite of a module's source (see the module docstring for the levels)."""
    return rewrite(source, level=level)[0]


def best_aprime(source: str, *, level: int = 2) -> tuple[int, str]:
    """(level, text) of the highest level ≤ `level` whose rewrite passes the equivalence check.

    Level 0 (identity) always does. The emitter still lowers the level itself when the repo's suite or
    the oracle fails on the returned A′ (behaviour a static check cannot see, e.g. code reading its own
    source).
    """
    for candidate in range(level, 0, -1):
        try:
            return candidate, make_aprime(source, level=candidate)
        except APrimeError:
            continue
    return 0, source


def aprime_diff(path: str, source: str, level: int = 2) -> str:
    """The unified diff A → A′ for the file at `path` (relative to the repo root); '' at level 0."""
    return make_diff(path, source, make_aprime(source, level=level))

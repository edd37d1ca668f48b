"""Python source files as the commit_pair miner reads them: which paths are package source, the
functions of one file version with their line spans, what a change leaves behaviourally equal, and which
names a function needs from its module.

Kept apart from the miner (`commit_pair.py`) so that module holds only the walk and the per-commit
decisions.
"""

from __future__ import annotations

import ast
import builtins
import difflib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from repo2rlenv.pysource.functions import (
    TargetSkip as FileSkip,
    module_name_for,
)
from repo2rlenv.pysource.functions import (  # layout rules shared with function discovery
    _file_skip_reason,
    _python_files,
    _source_units,
    _unit_root,
)

# Names a function may use without the module defining them.
IMPLICIT_NAMES = frozenset(dir(builtins)) | {"__file__", "__path__", "__builtins__", "__class__"}
# How modules commonly import `typing` (for `t.cast(...)`).
_TYPING_MODULES = frozenset({"typing", "t", "typing_extensions", "tp"})


class Layout:
    """Which paths are package source, each mapped to the path of the same module at the ref.

    A commit from before a layout move (``pkg/x.py`` → ``src/pkg/x.py``) still maps: paths are matched
    by module name under every plausible import root. A module the ref no longer has still counts as
    source when its top-level package exists at the ref (its path at the ref is then None).
    """

    def __init__(self, a_dir: Path, import_roots: list[str] | None):
        self.units = _source_units(a_dir, import_roots)
        self.by_module: dict[str, str] = {}
        for rel in _python_files(a_dir):
            if _file_skip_reason(rel, self.units) is None:
                module = module_name_for(str(rel), (_unit_root(rel, self.units),))
                if module:
                    self.by_module[module] = str(rel)
        self.roots = tuple(dict.fromkeys([*self.units.values(), "src", ""]))
        self.packages = {module.split(".")[0] for module in self.by_module if "." in module}

    def is_test(self, path: str) -> bool:
        return _file_skip_reason(PurePosixPath(path), self.units) is FileSkip.TEST_CODE

    def match(self, path: str) -> tuple[str, str | None] | None:
        """(module name, the module's path at the ref or None) for a package source path of any commit."""
        if _file_skip_reason(PurePosixPath(path), self.units) in (FileSkip.TEST_CODE, FileSkip.VENDORED):
            return None
        modules = [m for root in self.roots if (m := module_name_for(path, (root,)))]
        for module in modules:
            if module in self.by_module:
                return module, self.by_module[module]
        for module in modules:
            if "." in module and module.split(".")[0] in self.packages:
                return module, None
        return None

    def ref_path(self, path: str) -> str | None:
        found = self.match(path)
        return found[1] if found else None


# Files that describe a change rather than make it (issue 33, "no way back to the change"): a changelog,
# release notes, a news fragment, the documentation. A real-history task's A takes them from the parent,
# else the agent could read what changed, and so where B differs, in its own workspace.
_NOTE_DIRS = frozenset({"docs", "doc", "changelog.d", "changes", "newsfragments", "news", "changelog"})
_NOTE_STEMS = ("CHANGES", "CHANGELOG", "NEWS", "HISTORY", "RELEASE", "WHATSNEW")


def is_note(path: str) -> bool:
    """Whether `path` describes changes (changelog, news fragment, documentation) rather than code."""
    pure = PurePosixPath(path)
    if pure.parts and pure.parts[0].lower() in _NOTE_DIRS:
        return True
    # A module named so (`changes.py`) is code, whatever its name says.
    return pure.suffix != ".py" and pure.name.upper().startswith(_NOTE_STEMS)


DefNode = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True, slots=True)
class Span:
    """One importable function of a file: its node and its lines, decorators included."""

    node: DefNode
    start: int
    end: int


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


class _Normalizer(ast.NodeTransformer):
    """Drops, in place, what cannot change behaviour: docstrings, type annotations, ``typing.cast``.

    Typing-only commits are common and would otherwise pass as changes whose B equals A in behaviour.
    (Code that reads annotations at run time — singledispatch, pydantic — is the rare exception.)
    """

    def _body(self, node: ast.Module | ast.ClassDef | DefNode) -> ast.AST:
        self.generic_visit(node)
        if node.body and _is_docstring(node.body[0]):
            node.body = node.body[1:] or [ast.Pass()]
        return node

    visit_Module = visit_ClassDef = _body

    def visit_FunctionDef(self, node: DefNode) -> ast.AST:
        node.returns = None
        return self._body(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_arg(self, node: ast.arg) -> ast.AST:
        node.annotation = None
        return node

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST | None:
        self.generic_visit(node)
        if node.value is None:  # a bare `x: T` only declares
            return None
        return ast.Assign(targets=[node.target], value=node.value, lineno=node.lineno)

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        func = node.func
        is_cast = (isinstance(func, ast.Name) and func.id == "cast") or (
            isinstance(func, ast.Attribute) and func.attr == "cast" and isinstance(func.value, ast.Name)
            and func.value.id in _TYPING_MODULES)
        return node.args[1] if is_cast and len(node.args) == 2 and not node.keywords else node


def function_spans(tree: ast.Module) -> dict[tuple[str, int], Span]:
    """Functions keyed by (qualname, occurrence); closures belong to the function around them."""
    found: dict[tuple[str, int], Span] = {}
    seen: Counter[str] = Counter()

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                qualname = prefix + child.name
                start = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                found[(qualname, seen[qualname])] = Span(child, start, child.end_lineno or child.lineno)
                seen[qualname] += 1
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, (ast.stmt, ast.excepthandler, ast.match_case)):
                visit(child, prefix)

    visit(tree, "")
    return found


def _binds(node: ast.AST) -> list[str]:
    """Names this one node binds: assignment targets, parameters, defs, imports, handlers, captures."""
    if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
        return [node.id]
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name).split(".")[0] for a in node.names]
    if isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
        return [node.name]
    if isinstance(node, ast.MatchMapping) and node.rest:
        return [node.rest]
    return []


def free_names(func: DefNode) -> set[str]:
    """Names the function reads but never binds itself: globals, builtins (closures included)."""
    loaded: set[str] = set()
    bound: set[str] = set()
    for node in ast.walk(func):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            loaded.add(node.id)
        bound.update(_binds(node))
    return loaded - bound


def module_names(tree: ast.Module) -> set[str] | None:
    """Names bound at module level, through if/try/with blocks (None after a star import)."""
    names: set[str] = set()
    stack: list[ast.AST] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            return None
        names.update(_binds(node))
        # A def's or class's inner names and a lambda's parameters are not module names.
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))
    return names


@dataclass(slots=True)
class FileVersion:
    """One file at one commit: text, lines (split on \\n only, as line numbers count), parsed tree."""

    text: str
    lines: list[str]
    tree: ast.Module
    spans: dict[tuple[str, int], Span]

    @classmethod
    def parse(cls, text: str, path: str) -> "FileVersion":
        tree = _Normalizer().visit(ast.parse(text, filename=path))
        return cls(text, text.split("\n"), tree, function_spans(tree))

    def segment(self, span: Span) -> list[str]:
        return self.lines[span.start - 1:span.end]


def changed_weights(before: FileVersion, after: FileVersion, opcodes: list[tuple[str, int, int, int, int]]) -> Counter:
    """Changed lines per function key: removed lines inside its old span plus added lines in its new one."""
    weight: Counter[tuple[str, int]] = Counter()
    for tag, i1, i2, j1, j2 in opcodes:
        if tag == "equal":
            continue
        for version, lo, hi in ((before, i1, i2), (after, j1, j2)):
            for key, span in version.spans.items():
                weight[key] += max(0, min(hi, span.end) - max(lo + 1, span.start) + 1)
    return +weight


def changed_line(a_lines: list[str], b_lines: list[str], start: int, executable: set[int]) -> int:
    """A changed line of the function on A: an executable one when there is one, else the first line of
    the statement a changed continuation line belongs to (coverage only knows statements' first lines)."""
    changed: set[int] = set()
    for tag, i1, i2, _, _ in difflib.SequenceMatcher(None, a_lines, b_lines, autojunk=False).get_opcodes():
        if tag != "equal":
            changed.update(range(start + i1, start + i2) if i2 > i1 else [start + min(i1, len(a_lines) - 1)])
    runnable = changed & executable
    if not runnable:
        runnable = {max(e for e in executable if e <= line) for line in changed
                    if any(start <= e <= line for e in executable)}
    return min(runnable or changed)

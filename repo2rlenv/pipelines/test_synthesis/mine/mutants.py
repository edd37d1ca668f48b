"""Mutants of one function: enumerate an operator table's sites, apply one, diff it, sample many.

Split from `operators.py` (the table and its rewriters): this module owns parsing a file once, finding
sites inside one function's span, splicing a replacement in while keeping every other byte, and the
seeded, spread-out sampling order.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import itertools
import random
import re
import warnings
from collections.abc import Iterable, Mapping, Sequence

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider, WhitespaceInclusivePositionProvider
from pydantic import BaseModel, ConfigDict, Field

from repo2rlenv.pysource.functions import FunctionRecord
from repo2rlenv.verifiers.test_synthesis.verifier_patch import split_lines
from repo2rlenv.pipelines.test_synthesis.mine.operators import (
    OPERATOR_LIST,
    OPERATORS,
    TEXT_NODES,
    MutationError,
    MutationKind,
    Operator,
    is_main_guard,
    is_message_call,
)


class Mutant(BaseModel):
    """Version B of a task: one operator applied at one site of one function."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    operator: str = Field(description="key of the operator table")
    kind: MutationKind = Field(description="kind of behaviour change")
    path: str = Field(description="POSIX path of the module relative to the repo root")
    qualname: str = Field(description="qualname of the mutated function")
    line: int = Field(description="1-based line of the mutated node in the original source")
    col: int = Field(description="0-based character column of the mutated node in the original source")
    original: str = Field(description="source text of the mutated node before the change")
    replacement: str = Field(description="source text that replaces it")
    mutant_id: str = Field(description="stable short hash of path, qualname, operator, position and texts")
    mutated_source: str = Field(description="the whole module with only this change applied")
    diff: str = Field(description="unified diff a/<path> → b/<path> that `git apply` accepts")


_PROTECTED = (*TEXT_NODES, cst.Decorator, cst.Parameters, cst.Annotation, cst.Raise)
# Nodes that can hold a `def`; the function index descends only through these.
_DEF_CONTAINERS = (cst.Module, cst.IndentedBlock, cst.BaseCompoundStatement, cst.Else, cst.ExceptHandler,
                   cst.ExceptStarHandler, cst.Finally, cst.MatchCase)

_NEWLINE = re.compile(r"\r\n?|\n")  # the line breaks libcst counts lines by
_HUNK_HEADER = re.compile(r"^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@")

Site = tuple[Operator, cst.CSTNode, cst.CSTNode]
"""(operator, node of the parsed tree, its replacement)"""


def _mutant_id(*parts: object) -> str:
    return hashlib.sha256("\x1f".join(map(str, parts)).encode()).hexdigest()[:12]


_TOKENS = (cst.BaseBinaryOp, cst.BaseAugOp, cst.BaseCompOp, cst.BaseBooleanOp)


def _display(module: cst.Module, node: cst.CSTNode) -> str:
    """A node's code without the whitespace (and comments, for a token) and `;` it owns around itself."""
    if isinstance(node, _TOKENS):
        node = node.with_changes(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))
    return module.code_for_node(node).strip().removesuffix(";").rstrip()


def _compiles(source: str, path: str) -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. SyntaxWarning for `x is 1`: a warning, not a failure
        try:
            compile(source, path, "exec", dont_inherit=True)
        except (SyntaxError, ValueError):
            return False
    return True


def _with_child(parent: cst.CSTNode, child: cst.CSTNode, new: cst.CSTNode) -> cst.CSTNode:
    """``parent`` with the field (or sequence item) holding ``child`` set to ``new``."""
    for field in dataclasses.fields(parent):
        value = getattr(parent, field.name)
        if value is child:
            return parent.with_changes(**{field.name: new})
        if isinstance(value, (tuple, list)) and any(item is child for item in value):
            return parent.with_changes(**{field.name: type(value)(new if item is child else item for item in value)})
    raise MutationError(f"{type(child).__name__} is not a child of {type(parent).__name__}")


class _SiteCollector(cst.CSTVisitor):
    """Collects the rewrites of some operators inside one subtree, skipping protected code, and records
    each visited node's parent so a rewrite can be applied by rebuilding only the path to the root."""

    def __init__(self, operators: Sequence[Operator], root_parent: cst.CSTNode) -> None:
        super().__init__()
        self.operators = operators
        self.sites: list[Site] = []
        self.parents: dict[int, cst.CSTNode] = {}
        self._stack: list[cst.CSTNode] = [root_parent]
        self._protected: set[int] = set()  # ids of nodes only their parent can tell apart (assert messages)

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.parents[id(node)] = self._stack[-1]
        self._stack.append(node)
        if (id(node) in self._protected or isinstance(node, _PROTECTED) or is_message_call(node)
                or (isinstance(node, cst.If) and is_main_guard(node))):
            return False
        if isinstance(node, cst.Assert) and node.msg is not None:
            self._protected.add(id(node.msg))
        for op in self.operators:
            if isinstance(node, op.node_types):
                self.sites.extend((op, site, new) for site, new in op.rewrites(node))
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self._stack.pop()


class _FunctionIndex(cst.CSTVisitor):
    """Every def a test can reach, keyed by qualname (closures get `<locals>` and so never match),
    with the chain of its ancestors from the module down."""

    def __init__(self) -> None:
        super().__init__()
        self.by_qualname: dict[str, list[tuple[cst.FunctionDef, tuple[cst.CSTNode, ...]]]] = {}
        self._names: list[str] = []
        self._stack: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.FunctionDef):
            qualname = ".".join([*self._names, node.name.value])
            self.by_qualname.setdefault(qualname, []).append((node, tuple(self._stack)))
        self._stack.append(node)
        if isinstance(node, (cst.ClassDef, cst.FunctionDef)):
            self._names += [node.name.value] if isinstance(node, cst.ClassDef) else [node.name.value, "<locals>"]
        return isinstance(node, _DEF_CONTAINERS)

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self._stack.pop()
        if isinstance(original_node, cst.ClassDef):
            self._names.pop()
        elif isinstance(original_node, cst.FunctionDef):
            del self._names[-2:]


def _select(names: Iterable[str] | None) -> list[Operator]:
    if names is None:
        return list(OPERATOR_LIST)
    chosen = list(dict.fromkeys(names))
    unknown = [name for name in chosen if name not in OPERATORS]
    if unknown:
        raise MutationError(f"unknown mutation operator(s) {unknown}; known: {sorted(OPERATORS)}")
    return [OPERATORS[name] for name in chosen]


class ModuleMutator:
    """One parsed module: enumerates and re-applies mutants of any of its functions without re-parsing.

    Every untouched byte of the file is kept; a mutant costs a splice (or a re-render of the module),
    a compile and a diff, never a re-parse or a whole-tree `deep_replace`.
    """

    def __init__(self, source: str, path: str) -> None:
        try:
            # Freshly parsed and never handed out, so the defensive deep copy of the tree can be skipped.
            wrapper = MetadataWrapper(cst.parse_module(source), unsafe_skip_copy=True)
        except cst.ParserSyntaxError as exc:
            raise MutationError(f"{path}: libcst cannot parse the module: {exc.message}") from exc
        self._source = source
        self._path = path
        self._module = wrapper.module
        self._positions = wrapper.resolve(PositionProvider)  # the node itself: a mutant's line and column
        self._spans = wrapper.resolve(WhitespaceInclusivePositionProvider)  # the text its code covers
        self._line_starts = [0, *(match.end() for match in _NEWLINE.finditer(source))]
        index = _FunctionIndex()
        self._module.visit(index)
        self._functions = index.by_qualname

    def _sites(
        self, qualname: str, line: int, *, exact: bool, operators: Sequence[Operator]
    ) -> tuple[list[Site], dict[int, cst.CSTNode]]:
        """The rewrites inside function ``qualname`` (whose `def` is at ``line``, or whose span holds it),
        ordered by position then operator name, and a child-id → parent map for the path to the module."""
        for function, ancestors in self._functions.get(qualname, []):
            span = self._positions[function]
            if span.start.line == line if exact else span.start.line <= line <= span.end.line:
                break
        else:
            raise MutationError(f"{self._path}: no function {qualname} at line {line}")
        collector = _SiteCollector(operators, function)
        function.body.visit(collector)
        parents = collector.parents
        chain = (*ancestors, function)
        parents.update((id(child), parent) for parent, child in zip(chain, chain[1:]))
        pos = self._positions
        sites = sorted(collector.sites, key=lambda s: (pos[s[1]].start.line, pos[s[1]].start.column, s[0].name))
        return sites, parents

    def _render(self, site: cst.CSTNode, new: cst.CSTNode, parents: Mapping[int, cst.CSTNode]) -> str | None:
        """The module with ``site`` replaced by ``new``; None when libcst refuses the result
        (e.g. `while(x)` → `whilenot (x)` fails its whitespace validation).

        Fast path: when ``site`` rendered on its own equals its text in the file, it carries no
        indentation from its context, and neither does ``new`` (built from the same whitespace nodes),
        so ``new``'s code is spliced into the source. Otherwise only the nodes on the path from the site
        to the module are rebuilt (the rest of the tree is shared) and the module is re-rendered.
        """
        span = self._spans[site]
        start = self._line_starts[span.start.line - 1] + span.start.column
        end = self._line_starts[span.end.line - 1] + span.end.column
        if self._source[start:end] == self._module.code_for_node(site):
            return self._source[:start] + self._module.code_for_node(new) + self._source[end:]
        node, replacement = site, new
        try:
            while node is not self._module:
                parent = parents[id(node)]
                node, replacement = parent, _with_child(parent, node, replacement)
        except cst.CSTValidationError:
            return None
        assert isinstance(replacement, cst.Module)
        return replacement.code

    def mutants(self, func: FunctionRecord, *, operators: Iterable[str] | None = None) -> list[Mutant]:
        """Mutants of ``func``'s body, by position then operator name; no-ops, duplicates and mutants
        that do not compile are dropped."""
        sites, parents = self._sites(func.qualname, func.lineno, exact=True, operators=_select(operators))
        seen = {self._source}
        found = []
        for op, site, new in sites:
            mutated = self._render(site, new, parents)
            if mutated is None or mutated in seen or not _compiles(mutated, self._path):
                continue
            seen.add(mutated)
            position = self._positions[site].start
            original, replacement = _display(self._module, site), _display(self._module, new)
            found.append(Mutant(
                operator=op.name, kind=op.kind, path=self._path, qualname=func.qualname,
                line=position.line, col=position.column, original=original, replacement=replacement,
                mutant_id=_mutant_id(self._path, func.qualname, op.name, position.line, position.column,
                                     original, replacement),
                mutated_source=mutated, diff=unified_diff(self._path, self._source, mutated),
            ))
        return found

    def apply(self, mutant: Mutant) -> str:
        """Re-find the mutant's site by position and texts and return the mutated module."""
        operators = _select([mutant.operator])
        sites, parents = self._sites(mutant.qualname, mutant.line, exact=False, operators=operators)
        for _, site, new in sites:
            position = self._positions[site].start
            if (position.line, position.column) != (mutant.line, mutant.col):
                continue
            texts = _display(self._module, site), _display(self._module, new)
            mutated = self._render(site, new, parents) if texts == (mutant.original, mutant.replacement) else None
            if mutated is not None:
                return mutated
        raise MutationError(f"{self._path}: mutant {mutant.mutant_id} does not apply to this source")


def enumerate_mutants(source: str, func: FunctionRecord, *, operators: Iterable[str] | None = None) -> list[Mutant]:
    """All mutants of ``func`` in ``source`` (use `ModuleMutator` to mutate many functions of one file)."""
    return ModuleMutator(source, func.path).mutants(func, operators=operators)


def apply_mutant(source: str, mutant: Mutant) -> str:
    """Re-apply ``mutant`` to ``source``; equals ``mutant.mutated_source`` for the source it came from."""
    return ModuleMutator(source, mutant.path).apply(mutant)


def unified_diff(path: str, before: str, after: str) -> str:
    """A git-style unified diff (3 lines of context) from ``before`` to ``after``; "" when equal."""
    if before == after:
        return ""
    # Split on "\n" only, as git does (str.splitlines also splits on \f, \x1c, …).
    a, b = split_lines(before), split_lines(after)
    # difflib is quadratic-ish on long files; diff only the window around the changed lines and shift
    # the hunk headers back (a mutant changes one small region of a possibly long module).
    shortest = min(len(a), len(b))
    head = next((i for i in range(shortest) if a[i] != b[i]), shortest)
    tail = next((i for i in range(shortest - head) if a[-1 - i] != b[-1 - i]), shortest - head)
    lo, trim = max(head - 3, 0), max(tail - 3, 0)

    def shift(match: re.Match[str]) -> str:
        return f"@@ -{int(match[1]) + lo}{match[2] or ''} +{int(match[3]) + lo}{match[4] or ''} @@"

    out = [f"diff --git a/{path} b/{path}\n"]
    for line in difflib.unified_diff(a[lo:len(a) - trim], b[lo:len(b) - trim], f"a/{path}", f"b/{path}", n=3):
        line = _HUNK_HEADER.sub(shift, line) if line.startswith("@@") else line
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def sample_mutants(
    mutants_by_function: Mapping[str, list[Mutant]],
    *,
    seed: int,
    max_per_function: int,
    limit: int | None = None,
) -> list[Mutant]:
    """A seeded, deterministic pick spread round-robin over files and functions.

    Each function's mutants are shuffled by a generator seeded with (seed, function key) and cut to
    ``max_per_function``; files are shuffled by ``seed`` and the functions of each file by (seed, path);
    functions are then ordered first-of-each-file, second-of-each-file, … and mutants are taken one per
    function per round, so a ``limit`` cuts across as many files and functions as possible.
    """
    per_function: dict[str, list[Mutant]] = {}
    for key in sorted(mutants_by_function):
        mutants = sorted(mutants_by_function[key], key=lambda mutant: mutant.mutant_id)  # input order must not matter
        random.Random(f"{seed}:{key}").shuffle(mutants)
        if mutants and max_per_function > 0:
            per_function[key] = mutants[:max_per_function]
    by_file: dict[str, list[str]] = {}
    for key, mutants in per_function.items():
        by_file.setdefault(mutants[0].path, []).append(key)
    files = sorted(by_file)
    random.Random(seed).shuffle(files)
    for path in files:
        random.Random(f"{seed}:{path}").shuffle(by_file[path])
    order = [key for rank in itertools.zip_longest(*(by_file[path] for path in files)) for key in rank if key]
    columns = itertools.zip_longest(*(per_function[key] for key in order))
    picked = [mutant for rank in columns for mutant in rank if mutant is not None]
    return picked if limit is None else picked[:limit]

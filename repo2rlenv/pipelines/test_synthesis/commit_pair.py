"""The commit_pair miner: real commits that changed package source and no test, as broken/fixed pairs.

History is walked back from the ref (first parent, merges skipped). A commit C is a candidate when it
changes one function F's code (its AST without docstrings and type annotations differs from that of C's
parent) without touching a test, and F carries most of C's changed lines. Every commit that is not kept
is counted under ``commit: <reason>``.

Design decision — one environment per ref. Everything downstream (sandbox image, baseline, gates,
oracle, emitted task) is built from one snapshot A = the ref. So a commit is kept only when F's source
text at C equals F's text at the ref, and B is *the ref's file with F's body replaced by F as it was in
C's parent* (a source-only patch against the ref). A = the fixed F, B = the unfixed F, everything else
as at the ref. Consequences, deliberately:
- dependency files (pyproject.toml, setup.cfg, setup.py, requirements*.txt) are always the ref's, so
  issue 4's "one environment per dependency spec" holds by construction, for the ref's spec only; a
  commit whose function changed again later is not mined at all, whatever its dependencies were;
- the parent's F must still fit the ref's module: when it uses a module-level name the ref no longer
  defines (the commit or a later one renamed a helper), the pair is dropped rather than half-applied.
"""

from __future__ import annotations

import ast
import builtins
import difflib
from collections import Counter
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Iterator

from repo2rlenv.baseline.runner import BaselineReport
from repo2rlenv.errors import SourceError
from repo2rlenv.pipelines.test_synthesis.candidates import Candidate, candidate_id
from repo2rlenv.pipelines.test_synthesis.functions import (
    SkipReason as FileSkip,
    discover_functions,
    module_name_for,
)
from repo2rlenv.pipelines.test_synthesis.functions import (  # layout rules shared with function discovery
    _file_skip_reason,
    _python_files,
    _source_units,
    _unit_root,
)
from repo2rlenv.pipelines.test_synthesis.mutants import unified_diff
from repo2rlenv.pipelines.test_synthesis.options import TestSynthesisOptions
from repo2rlenv.sources import RepoSource

if TYPE_CHECKING:
    import git

# Names a function may use without the module defining them.
_IMPLICIT_NAMES = frozenset(dir(builtins)) | {"__file__", "__path__", "__builtins__", "__class__"}
# How modules commonly import `typing` (for `t.cast(...)`).
_TYPING_MODULES = frozenset({"typing", "t", "typing_extensions", "tp"})


class CommitSkip(StrEnum):
    """Why a commit yielded no candidate; counted as ``commit: <value>``."""

    shallow_boundary = "history ends here (shallow clone)"
    merge = "merge commit"
    root = "root commit"
    no_source = "touches no package source file"
    touches_tests = "touches a test file"
    too_many_files = "too many source files (max_files)"
    too_many_lines = "too many changed lines (max_lines)"
    unreadable = "source file unreadable or does not parse"
    cosmetic = "formatting, comments, docstrings or type annotations only"
    no_function = "changes map to no function present in both versions"
    gone_at_ref = "touched function no longer exists at the ref"
    changed_since = "touched function changed between the commit and the ref"
    not_eligible = "touched function not a task target at the ref (trivial, too short or too long)"
    not_imported = "module not imported by the suite"
    missing_names = "parent's function uses names missing at the ref"
    bad_transplant = "parent's function does not fit the ref's file"
    no_change = "no textual change after the transplant"
    duplicate = "same B as a newer commit"


class NoHistoryError(SourceError):
    """The source has no history to mine; `reason` is the short form counted by `hybrid`."""

    def __init__(self, message: str, reason: str):
        super().__init__(message)
        self.reason = reason


# --- source files: layout, functions, names --------------------------------------------------------------


class _Layout:
    """Which paths are package source, each mapped to the path of the same module at the ref.

    A commit from before a layout move (``pkg/x.py`` → ``src/pkg/x.py``) still maps: paths are matched
    by module name under every plausible import root.
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

    def is_test(self, path: str) -> bool:
        return _file_skip_reason(PurePosixPath(path), self.units) is FileSkip.TEST_CODE

    def ref_path(self, path: str) -> str | None:
        if self.is_test(path):
            return None
        for root in self.roots:
            module = module_name_for(path, (root,))
            if module in self.by_module:
                return self.by_module[module]
        return None


_Def = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True, slots=True)
class _Span:
    """One importable function of a file: its node and its lines, decorators included."""

    node: _Def
    start: int
    end: int


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


class _Normalizer(ast.NodeTransformer):
    """Drops, in place, what cannot change behaviour: docstrings, type annotations, ``typing.cast``.

    Typing-only commits are common and would otherwise pass as changes whose B equals A in behaviour.
    (Code that reads annotations at run time — singledispatch, pydantic — is the rare exception.)
    """

    def _body(self, node: ast.Module | ast.ClassDef | _Def) -> ast.AST:
        self.generic_visit(node)
        if node.body and _is_docstring(node.body[0]):
            node.body = node.body[1:] or [ast.Pass()]
        return node

    visit_Module = visit_ClassDef = _body

    def visit_FunctionDef(self, node: _Def) -> ast.AST:
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


def _spans(tree: ast.Module) -> dict[tuple[str, int], _Span]:
    """Functions keyed by (qualname, occurrence); closures belong to the function around them."""
    found: dict[tuple[str, int], _Span] = {}
    seen: Counter[str] = Counter()

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                qualname = prefix + child.name
                start = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                found[(qualname, seen[qualname])] = _Span(child, start, child.end_lineno or child.lineno)
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


def _free_names(func: _Def) -> set[str]:
    """Names the function reads but never binds itself: globals, builtins (closures included)."""
    loaded: set[str] = set()
    bound: set[str] = set()
    for node in ast.walk(func):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            loaded.add(node.id)
        bound.update(_binds(node))
    return loaded - bound


def _module_names(tree: ast.Module) -> set[str] | None:
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
class _Version:
    """One file at one commit: text, lines (split on \\n only, as line numbers count), parsed tree."""

    text: str
    lines: list[str]
    tree: ast.Module
    spans: dict[tuple[str, int], _Span]

    @classmethod
    def parse(cls, text: str, path: str) -> "_Version":
        tree = _Normalizer().visit(ast.parse(text, filename=path))
        return cls(text, text.split("\n"), tree, _spans(tree))

    def segment(self, span: _Span) -> list[str]:
        return self.lines[span.start - 1:span.end]


# --- one commit -------------------------------------------------------------------------------------------


def _weights(before: _Version, after: _Version, opcodes: list[tuple[str, int, int, int, int]]) -> Counter:
    """Changed lines per function key: removed lines inside its old span plus added lines in its new one."""
    weight: Counter[tuple[str, int]] = Counter()
    for tag, i1, i2, j1, j2 in opcodes:
        if tag == "equal":
            continue
        for version, lo, hi in ((before, i1, i2), (after, j1, j2)):
            for key, span in version.spans.items():
                weight[key] += max(0, min(hi, span.end) - max(lo + 1, span.start) + 1)
    return +weight


def _a_line(a_lines: list[str], b_lines: list[str], start: int, executable: set[int]) -> int:
    """A changed line of the function on A, an executable one when there is one."""
    changed: set[int] = set()
    for tag, i1, i2, _, _ in difflib.SequenceMatcher(None, a_lines, b_lines, autojunk=False).get_opcodes():
        if tag != "equal":
            changed.update(range(start + i1, start + i2) if i2 > i1 else [start + min(i1, len(a_lines) - 1)])
    runnable = changed & executable
    return min(runnable or changed)


class _Miner:
    """Examines commits one by one against the ref; holds the per-ref caches."""

    def __init__(self, repo: "git.Repo", a_dir: Path, baseline: BaselineReport, options: TestSynthesisOptions,
                 import_roots: list[str] | None):
        self.repo = repo
        self.a_dir = a_dir
        self.baseline = baseline
        self.options = options
        self.layout = _Layout(a_dir, import_roots)
        functions, _ = discover_functions(a_dir, import_roots=import_roots, min_loc=options.min_loc,
                                          max_loc=options.max_loc)
        self.targets = {(f.path, f.lineno): f for f in functions}
        self.ref_files: dict[str, tuple[_Version, set[str] | None]] = {}
        self.seen_b: set[tuple[str, str]] = set()

    def _read(self, commit: "git.Commit", path: str) -> str | None:
        """The file at `commit` (None when absent); raises UnicodeDecodeError for a non-UTF-8 file."""
        try:
            blob = commit.tree / path
        except KeyError:
            return None
        return blob.data_stream.read().decode("utf-8")

    def _ref(self, path: str) -> tuple[_Version, set[str] | None]:
        if path not in self.ref_files:
            version = _Version.parse((self.a_dir / path).read_text(encoding="utf-8"), path)
            self.ref_files[path] = (version, _module_names(version.tree))
        return self.ref_files[path]

    def examine(self, commit: "git.Commit") -> Candidate | CommitSkip:
        parent = commit.parents[0]
        paths = [p for p in self.repo.git.diff("--name-only", "--no-renames", "-z", parent.hexsha,
                                               commit.hexsha).split("\0") if p]
        sources = {p: ref for p in paths if (ref := self.layout.ref_path(p))}
        if not sources:
            return CommitSkip.no_source
        if any(self.layout.is_test(p) for p in paths):
            return CommitSkip.touches_tests
        if len(sources) > self.options.max_files:
            return CommitSkip.too_many_files
        texts: dict[str, tuple[str | None, str | None]] = {}
        try:
            for path in sources:
                texts[path] = (self._read(parent, path), self._read(commit, path))
        except UnicodeDecodeError:
            return CommitSkip.unreadable
        changed = 0
        opcodes = {}
        for path, (old, new) in texts.items():
            old_lines, new_lines = (old or "").split("\n"), (new or "").split("\n")
            opcodes[path] = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False).get_opcodes()
            changed += sum(i2 - i1 + j2 - j1 for tag, i1, i2, j1, j2 in opcodes[path] if tag != "equal")
        if changed > self.options.max_lines:
            return CommitSkip.too_many_lines
        try:
            versions = {p: tuple(None if t is None else _Version.parse(t, p) for t in pair)
                        for p, pair in texts.items()}
        except (SyntaxError, ValueError, RecursionError):
            return CommitSkip.unreadable
        if all(old is not None and new is not None and ast.dump(old.tree) == ast.dump(new.tree)
               for old, new in versions.values()):
            return CommitSkip.cosmetic
        best: tuple[int, str, tuple[str, int]] | None = None
        for path, (old, new) in versions.items():
            if old is None or new is None:
                continue
            for key, weight in _weights(old, new, opcodes[path]).items():
                if key in old.spans and key in new.spans and (best is None or weight > best[0]) and (
                        ast.dump(old.spans[key].node) != ast.dump(new.spans[key].node)):
                    best = (weight, path, key)
        if best is None:
            return CommitSkip.no_function
        _, path, key = best
        old, new = versions[path]
        return self._transplant(commit, sources[path], key, old, new)

    def _transplant(self, commit: "git.Commit", ref_path: str, key: tuple[str, int], old: _Version,
                    new: _Version) -> Candidate | CommitSkip:
        """B = the ref's file with the function as it was in the commit's parent."""
        ref, module_names = self._ref(ref_path)
        span = ref.spans.get(key)
        if span is None:
            return CommitSkip.gone_at_ref
        if ref.segment(span) != new.segment(new.spans[key]):
            return CommitSkip.changed_since
        record = self.targets.get((ref_path, span.node.lineno))
        if record is None:
            return CommitSkip.not_eligible
        measured = self.baseline.coverage.files.get(ref_path)
        # coverage.py also lists files under its `source` that nothing imported, with no line executed.
        if measured is None or not measured.executed:
            return CommitSkip.not_imported
        old_span = old.spans[key]
        if module_names is not None and (
                _free_names(old_span.node) - _free_names(span.node) - module_names - _IMPLICIT_NAMES):
            return CommitSkip.missing_names
        b_func = old.segment(old_span)
        b_text = "\n".join(ref.lines[:span.start - 1] + b_func + ref.lines[span.end:])
        if b_text == ref.text:
            return CommitSkip.no_change
        try:
            ast.parse(b_text, filename=ref_path)
        except (SyntaxError, ValueError, RecursionError):
            return CommitSkip.bad_transplant
        if (ref_path, b_text) in self.seen_b:
            return CommitSkip.duplicate
        self.seen_b.add((ref_path, b_text))
        executable = self.baseline.coverage.executable_lines(ref_path)
        return Candidate(
            candidate_id=candidate_id("commit_pair", commit.hexsha, ref_path, record.qualname),
            strategy="commit_pair", function=record, commit=commit.hexsha,
            line=_a_line(ref.segment(span), b_func, span.start, executable),
            files_b={ref_path: b_text}, diff=unified_diff(ref_path, ref.text, b_text),
        )


# --- the walk ---------------------------------------------------------------------------------------------


def _open(source: RepoSource, ref_commit: str | None) -> "git.Repo":
    if not source.has_git or ref_commit is None:
        raise NoHistoryError(f"commit_pair needs git history, but {source.spec} is a plain directory without "
                             ".git; use --pipeline-opt strategy=mutation", "no git history (plain directory)")
    import git

    return git.Repo(source.path)


def _walk(repo: "git.Repo", ref_commit: str, options: TestSynthesisOptions,
          first_parent: bool) -> Iterator["git.Commit"]:
    bounds = {"since": options.since, "until": options.until}
    return repo.iter_commits(ref_commit, first_parent=first_parent, max_count=options.max_commits,
                             **{k: v for k, v in bounds.items() if v})


def mine_commit_pairs(source: RepoSource, ref_commit: str | None, a_dir: Path, baseline: BaselineReport,
                      options: TestSynthesisOptions, import_roots: list[str], *, first_parent: bool = True,
                      ) -> tuple[list[Candidate], Counter[str], int]:
    """Candidates from the history behind `ref_commit`, newest first; skip counts; commits scanned.

    `a_dir` is the snapshot of `ref_commit` (A). `first_parent=False` also walks the commits that merges
    brought in (repos that land every change through a merge have few others). Raises `NoHistoryError`
    (a `SourceError`) for a plain directory, and for a shallow clone that ends before any candidate.
    """
    import git

    repo = _open(source, ref_commit)
    # Linked worktrees keep `shallow` in the common git dir.
    shallow_file = Path(repo.common_dir) / "shallow"
    shallow = set(shallow_file.read_text().split()) if shallow_file.is_file() else set()
    miner = _Miner(repo, a_dir, baseline, options, [r for r in import_roots if r] or None)
    candidates: list[Candidate] = []
    skipped: Counter[str] = Counter()
    scanned = 0
    boundary = None
    try:
        for commit in _walk(repo, ref_commit, options, first_parent):
            scanned += 1
            if commit.hexsha in shallow:
                # Its parents are not in the clone: nothing older can be read.
                boundary = commit.hexsha
                outcome: Candidate | CommitSkip = CommitSkip.shallow_boundary
            elif len(commit.parents) > 1:
                outcome = CommitSkip.merge
            elif not commit.parents:
                outcome = CommitSkip.root
            else:
                outcome = miner.examine(commit)
            if isinstance(outcome, Candidate):
                candidates.append(outcome)
            else:
                skipped[f"commit: {outcome.value}"] += 1
    except git.GitCommandError as exc:
        detail = (exc.stderr or str(exc)).strip().splitlines()
        raise SourceError(f"cannot walk the history of {source.spec}: {detail[-1] if detail else exc}") from exc
    if boundary is not None and not candidates:
        raise NoHistoryError(
            f"{source.spec} is a shallow clone: its history ends at {boundary[:12]} after {scanned} "
            "commit(s), before any usable commit; fetch more history (git fetch --unshallow) or use "
            "strategy=mutation",
            "history too short (shallow clone)")
    return candidates, skipped, scanned

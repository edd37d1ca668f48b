"""The commit_pair miner: real commits that changed package source and no test, as broken/fixed pairs.

History is walked back from the ref in units (issue 33). On the first-parent walk (the default) a unit is
one mainline entry: a commit, or a merge commit taken as its change against its first parent, which is
how a pull request lands on a merge-based repo (its side-branch commits are never walked, so nothing is
counted twice); squash-merged and rebased histories have no merges and every unit is a plain commit. With
`first_parent=false` every commit is walked and merges are skipped, as their side commits are walked
themselves. A unit C is a candidate when it
changes one function F's code (its AST without docstrings and type annotations differs from that of C's
parent) and F carries most of C's changed lines. Every unit that is not kept is counted under
``commit: <reason>`` (one table, whatever the unit).

A unit that also touches tests is kept with `pair_base=commit` only: A is then its tree with the parent's
version of every test file it touched (`Candidate.tests_a`), so the suite on A is the one that missed the
change, and the change's own test files (`Candidate.tests_change`) are the source of a human-written
oracle (`oracle/human.py`). Against the ref it is dropped (`touches_tests`), as the ref's suite may
already hold those tests.

A unit that changes several functions names one in its task: F, the one carrying most changed lines. So
that B differs from A in F alone (the instruction, coverage, twins and siblings are all F's), B is then A
with only F put back as it was in the parent; the unit's other changes stay in both. When the parent's F
reads a module-level name the commit's file no longer binds (a helper the change renamed or removed), it
cannot stand alone and the unit is dropped (`several_unfit`). Units with one changed function keep B = the
whole source diff reversed. Kept units of several functions say so in their record (gate `B reverses F
alone`) and are counted in the summary.

Nothing in A may describe the change either: the changelog entries, news fragments and documentation it
touched are the parent's in A (`Candidate.notes_a`, `commit_source.is_note`).

Two ways to pair (`pair_base`):
- ``commit`` (issue 4): A = C's own tree, B = A with the parent's version of every package source file C
  touched (C's source diff reversed; a file C added stays, one it deleted comes back). Each commit then
  needs the environment of its own dependency files, its own baseline and its own gates: see
  `commit_driver.py` and `repo2rlenv/sandbox/environments.py`. Whether the suite imports F's module is
  known only after that baseline, so the driver drops those pairs, not the miner.
- ``ref``: one environment for everything. A = the ref's tree and B = the ref's file with F replaced by
  F as it was in C's parent, so a commit is kept only when F's text at C equals F's text at the ref, and
  the parent's F must still fit the ref's module (a module-level name it uses that the ref no longer
  defines drops the pair rather than half-applying it). Dependency files are always the ref's.

A path counts as package source when its module (under any plausible import root) exists at the ref, so
a commit from before a layout move (``pkg/x.py`` → ``src/pkg/x.py``) still maps; with ``commit`` also
when only its top-level package does (a module deleted or renamed since).
"""

from __future__ import annotations

import ast
import difflib
from collections import Counter
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from repo2rlenv.baseline.runner import BaselineReport
from repo2rlenv.errors import SourceError
from repo2rlenv.pipelines.test_synthesis.candidates import Candidate, GateResult, candidate_id
from repo2rlenv.pipelines.test_synthesis.mine.commit_source import (
    IMPLICIT_NAMES,
    FileVersion,
    Layout,
    changed_line,
    changed_weights,
    free_names,
    is_note,
    module_names,
)
from repo2rlenv.pysource.functions import (  # the target rules of function discovery
    FunctionRecord,
    _is_generated,
    _is_trivial,
    _scan,
    discover_functions,
)
from repo2rlenv.pipelines.test_synthesis.mine.mutants import unified_diff
from repo2rlenv.pipelines.test_synthesis.options import TestSynthesisOptions
from repo2rlenv.sources import RepoSource, git_cause
from repo2rlenv.verifiers.test_synthesis.verifier_patch import make_diff

if TYPE_CHECKING:
    import git


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
    several_unfit = "changes several functions, and the parent's version of the main one does not fit alone"
    gone_at_ref = "touched function no longer exists at the ref"
    changed_since = "touched function changed between the commit and the ref"
    not_eligible = "touched function not a task target (trivial, generated, too short or too long)"
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


# --- one commit -------------------------------------------------------------------------------------------

_Texts = dict[str, tuple[str | None, str | None]]  # path at the commit → (text at the parent, text at C)
_Versions = dict[str, tuple[FileVersion | None, FileVersion | None]]


class _Miner:
    """Examines commits one by one; holds the per-ref caches."""

    def __init__(self, repo: "git.Repo", a_dir: Path, baseline: BaselineReport, options: TestSynthesisOptions,
                 import_roots: list[str] | None):
        self.repo = repo
        self.a_dir = a_dir
        self.baseline = baseline
        self.options = options
        self.layout = Layout(a_dir, import_roots)
        self.targets: dict[tuple[str, int], FunctionRecord] = {}
        if options.pair_base == "ref":
            functions, _ = discover_functions(a_dir, import_roots=import_roots, min_loc=options.min_loc,
                                              max_loc=options.max_loc)
            self.targets = {(f.path, f.lineno): f for f in functions}
        self.ref_files: dict[str, tuple[FileVersion, set[str] | None]] = {}
        self.seen_b: set[tuple[str, str]] = set()

    def _read(self, commit: "git.Commit", path: str) -> str | None:
        """The file at `commit` (None when absent); raises UnicodeDecodeError for a non-UTF-8 file."""
        try:
            blob = commit.tree / path
        except KeyError:
            return None
        return blob.data_stream.read().decode("utf-8")

    def _notes(self, parent: "git.Commit", paths: list[str]) -> dict[str, str | None]:
        """The parent's text of each note file; a binary one (an image of the docs) stays as the change
        left it, as it says little in words."""
        found: dict[str, str | None] = {}
        for path in paths:
            try:
                found[path] = self._read(parent, path)
            except UnicodeDecodeError:
                continue
        return found

    def _ref(self, path: str) -> tuple[FileVersion, set[str] | None]:
        if path not in self.ref_files:
            version = FileVersion.parse((self.a_dir / path).read_text(encoding="utf-8"), path)
            self.ref_files[path] = (version, module_names(version.tree))
        return self.ref_files[path]

    def examine(self, commit: "git.Commit") -> Candidate | CommitSkip:
        parent = commit.parents[0]
        paths = [p for p in self.repo.git.diff("--name-only", "--no-renames", "-z", parent.hexsha,
                                               commit.hexsha).split("\0") if p]
        # Against the ref, only modules the ref still has can be paired.
        sources = {p: found for p in paths if (found := self.layout.match(p))
                   and (found[1] is not None or self.options.pair_base == "commit")}
        if not sources:
            return CommitSkip.no_source
        tests = [p for p in paths if self.layout.is_test(p)]
        if tests and self.options.pair_base == "ref":
            return CommitSkip.touches_tests
        if len(sources) > self.options.max_files:
            return CommitSkip.too_many_files
        texts: _Texts = {}
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
            versions: _Versions = {p: (None if old is None else FileVersion.parse(old, p),
                                       None if new is None else FileVersion.parse(new, p))
                                   for p, (old, new) in texts.items()}
        except (SyntaxError, ValueError, RecursionError):
            return CommitSkip.unreadable
        if all(old is not None and new is not None and ast.dump(old.tree) == ast.dump(new.tree)
               for old, new in versions.values()):
            return CommitSkip.cosmetic
        best: tuple[int, str, tuple[str, int]] | None = None
        for path, (old, new) in versions.items():
            if old is None or new is None:
                continue
            for key, weight in changed_weights(old, new, opcodes[path]).items():
                if key in old.spans and key in new.spans and (best is None or weight > best[0]) and (
                        ast.dump(old.spans[key].node) != ast.dump(new.spans[key].node)):
                    best = (weight, path, key)
        if best is None:
            return CommitSkip.no_function
        _, path, key = best
        old, new = versions[path]
        assert old is not None and new is not None
        if self.options.pair_base == "commit":
            notes = [p for p in paths if p not in sources and p not in tests and is_note(p)]
            try:
                test_texts: _Texts = {p: (self._read(parent, p), self._read(commit, p)) for p in tests}
            except UnicodeDecodeError:  # a binary fixture: A could not be written without it
                return CommitSkip.unreadable
            others = _other_changed(versions, path, key)
            cand = self._reverse(commit, path, sources[path][0], key, texts, old, new, test_texts, others)
            if isinstance(cand, Candidate):
                cand.notes_a = self._notes(parent, notes)
                cand.notes_change = self._notes(commit, notes)
                cand.change_subject = _subject(commit)
            return cand
        ref_path = sources[path][1]
        assert ref_path is not None
        return self._transplant(commit, ref_path, key, old, new)

    def _record_at_commit(self, path: str, module: str, text: str, lineno: int) -> FunctionRecord | None:
        """The touched function as a task target in the commit's file, or None when it is not one."""
        if _is_generated(text):
            return None
        records, _ = _scan(text, ast.parse(text, filename=path), path, module)
        for record, body in records:
            if record.lineno == lineno:
                fits = self.options.min_loc <= record.loc <= self.options.max_loc
                return record if fits and not _is_trivial(body) else None
        return None

    def _reverse(self, commit: "git.Commit", path: str, module: str, key: tuple[str, int], texts: _Texts,
                 old: FileVersion, new: FileVersion, tests: _Texts, others: list[str]) -> Candidate | CommitSkip:
        """A = the commit's tree with the parent's tests; B = A with the parent's version of every source
        file the commit touched, or with the parent's F alone when the commit changed `others` too."""
        span = new.spans[key]
        record = self._record_at_commit(path, module, new.text, span.node.lineno)
        if record is None:
            return CommitSkip.not_eligible
        if others:
            b_text = _with_parent_function(new, old, key)
            if b_text is None:
                return CommitSkip.several_unfit
            files_b = {path: b_text}
            diff = unified_diff(path, new.text, b_text)
        else:
            # A file the commit added stays in B (a patch of texts cannot delete it, and nothing of the
            # parent imports it); a file it deleted comes back.
            files_b = {p: before for p, (before, _) in texts.items() if before is not None}
            diff = "".join(unified_diff(p, after, files_b[p]) if after is not None
                           else make_diff(p, None, files_b[p]) for p, (_, after) in texts.items() if p in files_b)
        if not diff:
            return CommitSkip.no_change
        if (path, diff) in self.seen_b:
            return CommitSkip.duplicate
        self.seen_b.add((path, diff))
        return Candidate(
            candidate_id=candidate_id("commit_pair", "commit", commit.hexsha, path, record.qualname),
            strategy="commit_pair", function=record, commit=commit.hexsha,
            line=changed_line(new.segment(span), old.segment(old.spans[key]), span.start, set(record.body_lines)),
            files_b=files_b, diff=diff, test_files=sorted(tests),
            tests_a={p: before for p, (before, _) in tests.items()},
            tests_change={p: after for p, (_, after) in tests.items() if after is not None},
            gates=[GateResult(gate=SEVERAL_GATE, passed=True, detail="the unit also changes " + ", ".join(others))]
            if others else [],
        )

    def _transplant(self, commit: "git.Commit", ref_path: str, key: tuple[str, int], old: FileVersion,
                    new: FileVersion) -> Candidate | CommitSkip:
        """B = the ref's file with the function as it was in the commit's parent."""
        ref, names = self._ref(ref_path)
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
        if names is not None and (free_names(old_span.node) - free_names(span.node) - names - IMPLICIT_NAMES):
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
            line=changed_line(ref.segment(span), b_func, span.start, executable),
            files_b={ref_path: b_text}, diff=unified_diff(ref_path, ref.text, b_text),
        )


def _subject(commit: "git.Commit") -> str:
    """The first line of the commit's message (a merge's is the pull request's title more often than not)."""
    message = commit.message if isinstance(commit.message, str) else commit.message.decode("utf-8", "replace")
    return message.strip().split("\n", 1)[0].strip()


# --- several functions ------------------------------------------------------------------------------------

# The record of a unit of several changed functions whose B puts back its main function alone.
SEVERAL_GATE = "B reverses F alone"


def _other_changed(versions: _Versions, path: str, key: tuple[str, int]) -> list[str]:
    """`path::qualname` of every function the unit changed besides F (`key` in `path`) and the functions
    nested in F or enclosing it; a function added or removed is not a change of behaviour of an existing
    one, so it does not count."""
    main = versions[path][1]
    assert main is not None
    f = main.spans[key]
    found = []
    for p, (old, new) in versions.items():
        if old is None or new is None:
            continue
        for k, span in new.spans.items():
            if k == key or k not in old.spans:
                continue
            if p == path and span.start <= f.end and f.start <= span.end:  # nested in F, or F nested in it
                continue
            if ast.dump(old.spans[k].node) != ast.dump(span.node):
                found.append(f"{p}::{k[0]}")
    return sorted(found)


def _with_parent_function(new: FileVersion, old: FileVersion, key: tuple[str, int]) -> str | None:
    """The commit's file with F as it was in the parent, or None when that F reads a module-level name the
    commit's file does not bind (or the result does not parse)."""
    span, old_span = new.spans[key], old.spans[key]
    names = module_names(new.tree)
    if names is not None and (free_names(old_span.node) - free_names(span.node) - names - IMPLICIT_NAMES):
        return None
    text = "\n".join(new.lines[:span.start - 1] + old.segment(old_span) + new.lines[span.end:])
    try:
        ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return None
    return text


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

    `a_dir` is the snapshot of `ref_commit`: A itself with `pair_base=ref`, the layout that decides which
    paths are package source either way (`baseline`, the suite at the ref, is read with `ref` only).
    With `first_parent` (the default) a merge is a unit like any commit, read against its first parent (a
    merged pull request); `first_parent=False` walks the side-branch commits instead and skips merges.
    Raises `NoHistoryError` (a `SourceError`) for a plain directory, and for a shallow clone that ends before any candidate.
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
            elif len(commit.parents) > 1 and not first_parent:
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
        raise SourceError(f"cannot walk the history of {source.spec}: {git_cause(exc.stderr or str(exc))}") from exc
    if boundary is not None and not candidates:
        raise NoHistoryError(
            f"{source.spec} is a shallow clone: its history ends at {boundary[:12]} after {scanned} "
            "commit(s), before any usable commit; fetch more history (git fetch --unshallow) or use "
            "strategy=mutation",
            "history too short (shallow clone)")
    return candidates, skipped, scanned

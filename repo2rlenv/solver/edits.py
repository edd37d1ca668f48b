"""Apply a reply's edits to the workspace's files: whole files, or search/replace with a unique match.

A SEARCH text must occur exactly once in the current file. Zero or several occurrences is an error that
goes back to the model as a turn showing the real text around the intended place (the closest region
for no match, every occurrence for several), since a model that misremembers a file fixes it best by
seeing it. A reply's edits are all-or-nothing: when any fails, no file changes, so the workspace never
holds a half-applied reply.

Which paths may be written is a `PathPolicy`: in task mode only the requested test file; in diff mode
new files `tests/**/test_*.py` that do not exist in the repo.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable
from enum import StrEnum
from pathlib import PurePosixPath
from typing import Protocol

from pydantic import BaseModel, ConfigDict

from repo2rlenv.solver.replies import Edit, SearchReplace, WholeFile
from repo2rlenv.solver.target import is_test_file
from repo2rlenv.solver.text import numbered

CONTEXT_LINES = 3
MAX_SHOWN_MATCHES = 3


class EditFailure(StrEnum):
    """Why an edit was not applied."""

    NO_MATCH = "no_match"
    AMBIGUOUS = "ambiguous"
    MISSING_FILE = "missing_file"
    EMPTY_SEARCH = "empty_search"
    FORBIDDEN_PATH = "forbidden_path"


class EditError(BaseModel):
    """One refused edit, with the text the model needs to retry it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str
    failure: EditFailure
    message: str


class PathPolicy(Protocol):
    """Which workspace-relative paths the agent may write."""

    def refuse(self, path: str) -> str | None:
        """None when `path` may be written, else the reason it may not."""
        ...


class OnlyPaths:
    """Task mode: exactly the listed files (the one graded test file)."""

    def __init__(self, allowed: Iterable[str]):
        self.allowed = frozenset(allowed)

    def refuse(self, path: str) -> str | None:
        if path in self.allowed:
            return None
        return f"only {', '.join(sorted(self.allowed))} may be written (it is the only file graded)"


class NewTestFiles:
    """Diff mode: new `tests/**/test_*.py` files; never one the repository already has."""

    def __init__(self, existing: Iterable[str]):
        self.existing = frozenset(existing)

    def refuse(self, path: str) -> str | None:
        if not is_test_file(path):
            return "only new test files tests/**/test_*.py may be written"
        if path in self.existing:
            return "the repository already has this file; write a new one"
        return None


def clean_path(path: str, workspace: str) -> str | None:
    """`path` relative to the workspace, POSIX; None when it leaves the workspace."""
    p = path.strip().strip("`'\"")
    if p.startswith(workspace.rstrip("/") + "/"):
        p = p[len(workspace.rstrip("/")) + 1:]
    pure = PurePosixPath(p)
    if pure.is_absolute() or ".." in pure.parts or not pure.parts:
        return None
    return pure.as_posix()


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _closest_region(text: str, search: str) -> tuple[int, int]:
    """1-based first and last line of the window of `text` most like `search`."""
    lines = text.splitlines()
    want = [line.strip() for line in search.strip("\n").splitlines()]
    size = max(1, len(want))
    best, best_start = -1.0, 1
    target = "\n".join(want)
    for start in range(0, max(1, len(lines) - size + 1)):
        window = "\n".join(line.strip() for line in lines[start:start + size])
        matcher = difflib.SequenceMatcher(None, window, target, autojunk=False)
        if matcher.real_quick_ratio() <= best or matcher.quick_ratio() <= best:
            continue
        ratio = matcher.ratio()
        if ratio > best:
            best, best_start = ratio, start + 1
    return best_start, min(len(lines), best_start + size - 1)


def _no_match(path: str, text: str, search: str) -> EditError:
    first, last = _closest_region(text, search)
    shown = numbered(text, first - CONTEXT_LINES, last + CONTEXT_LINES)
    return EditError(path=path, failure=EditFailure.NO_MATCH, message=(
        f"The SEARCH text does not occur in {path}. The closest lines ({first}-{last}) are, as the file "
        f"has them now:\n{shown}\nCopy the SEARCH text exactly from the file (indentation included)."))


def _ambiguous(path: str, text: str, search: str, count: int) -> EditError:
    starts, at = [], text.find(search)
    while at != -1 and len(starts) < MAX_SHOWN_MATCHES:
        starts.append(_line_of(text, at))
        at = text.find(search, at + 1)
    height = search.count("\n") or 1
    regions = "\n".join(f"occurrence at line {s}:\n{numbered(text, s - CONTEXT_LINES, s + height + CONTEXT_LINES - 1)}"
                        for s in starts)
    return EditError(path=path, failure=EditFailure.AMBIGUOUS, message=(
        f"The SEARCH text occurs {count} times in {path}, so it is not clear which to change.\n{regions}\n"
        "Make SEARCH unique by including neighbouring lines."))


def apply_one(edit: Edit, current: str | None) -> str | EditError:
    """The file's new text after `edit`, or why it cannot be applied."""
    if isinstance(edit, WholeFile):
        return edit.content if edit.content.endswith("\n") or not edit.content else edit.content + "\n"
    assert isinstance(edit, SearchReplace)
    if current is None:
        return EditError(path=edit.path, failure=EditFailure.MISSING_FILE,
                         message=f"{edit.path} does not exist yet: send the whole file in a FILE block.")
    if not edit.search.strip():
        return EditError(path=edit.path, failure=EditFailure.EMPTY_SEARCH,
                         message="An empty SEARCH matches everywhere: quote the lines to replace.")
    count = current.count(edit.search)
    if count == 1:
        return current.replace(edit.search, edit.replace, 1)
    if count == 0:
        return _no_match(edit.path, current, edit.search)
    return _ambiguous(edit.path, current, edit.search, count)


def apply_edits(edits: list[Edit], read: Callable[[str], str | None], policy: PathPolicy,
                workspace: str) -> tuple[dict[str, str], list[EditError]]:
    """New texts of the files the edits change, or the errors (then nothing is to be written)."""
    texts: dict[str, str | None] = {}
    errors: list[EditError] = []
    for edit in edits:
        path = clean_path(edit.path, workspace)
        if path is None:
            errors.append(EditError(path=edit.path, failure=EditFailure.FORBIDDEN_PATH,
                                    message=f"{edit.path} is outside the repository"))
            continue
        reason = policy.refuse(path)
        if reason is not None:
            errors.append(EditError(path=path, failure=EditFailure.FORBIDDEN_PATH, message=f"{path}: {reason}"))
            continue
        if path not in texts:
            texts[path] = read(path)
        result = apply_one(edit.model_copy(update={"path": path}), texts[path])
        if isinstance(result, EditError):
            errors.append(result)
        else:
            texts[path] = result
    if errors:
        return {}, errors
    return {p: t for p, t in texts.items() if t is not None}, []

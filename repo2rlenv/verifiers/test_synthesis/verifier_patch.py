"""Unified diffs written and applied in pure Python.

The in-task verifier builds versions B, A′ and the sibling mutants by applying diffs to A. It never
calls `patch` or `git`: an agent working in the same container could have replaced those binaries.
Application is strict: every context and removed line must match at the hunk's stated position, so a
diff made against a different A fails loudly instead of producing a fuzzy, wrong variant.

Texts are `str`; callers decode file bytes with UTF-8 and `surrogateescape` so any byte survives a
round trip. Lines split on "\\n" only (a form feed or "\\r" inside a line is content, not a break).

Stdlib only: this file is copied verbatim into every task's `tests/` directory.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

DEV_NULL = "/dev/null"
NO_NEWLINE = "\\ No newline at end of file"
_HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


class PatchError(Exception):
    """A diff is malformed, names an unsafe path, or does not apply to the given files."""


@dataclass(slots=True)
class Hunk:
    """One `@@` block: its old start/length and its lines, each prefixed with ' ', '-' or '+'."""

    old_start: int
    old_len: int
    new_start: int
    new_len: int
    lines: list[str] = field(default_factory=list)


@dataclass(slots=True)
class FilePatch:
    """All hunks for one file; `old_path` is None for a created file, `new_path` None for a deleted one."""

    old_path: str | None
    new_path: str | None
    hunks: list[Hunk] = field(default_factory=list)

    @property
    def path(self) -> str:
        return self.new_path if self.new_path is not None else self.old_path  # type: ignore[return-value]


def split_lines(text: str) -> list[str]:
    """Lines with their "\\n" kept; the last one has none when the text does not end in a newline."""
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def check_relpath(path: str) -> str:
    """`path` when it is a plain relative path inside a tree; PatchError otherwise."""
    pieces = path.split("/")
    if not path or path.startswith("/") or "\\" in path or any(p in ("", ".", "..") for p in pieces):
        raise PatchError(f"unsafe path in diff: {path!r}")
    return path


# --------------------------------------------------------------------------- writing

def _hunk_lines(prefix: str, lines: list[str]) -> list[str]:
    out = []
    for line in lines:
        if line.endswith("\n"):
            out.append(prefix + line)
        else:
            out.append(prefix + line + "\n")
            out.append(NO_NEWLINE + "\n")
    return out


def _range(start: int, length: int) -> str:
    # Unified-diff convention: an empty range names the line *before* it.
    first = start + 1 if length else start
    return f"{first},{length}"


def make_diff(path: str, old: str | None, new: str | None, *, context: int = 3) -> str:
    """A unified diff taking `old` to `new` for `path` ('' when equal); None means absent (create/delete)."""
    check_relpath(path)
    if old == new:
        return ""
    a, b = split_lines(old or ""), split_lines(new or "")
    head = [f"--- {'a/' + path if old is not None else DEV_NULL}\n",
            f"+++ {'b/' + path if new is not None else DEV_NULL}\n"]
    body: list[str] = []
    for group in difflib.SequenceMatcher(None, a, b, autojunk=False).get_grouped_opcodes(context):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        body.append(f"@@ -{_range(i1, i2 - i1)} +{_range(j1, j2 - j1)} @@\n")
        for tag, s1, e1, s2, e2 in group:
            if tag == "equal":
                body += _hunk_lines(" ", a[s1:e1])
                continue
            body += _hunk_lines("-", a[s1:e1])
            body += _hunk_lines("+", b[s2:e2])
    if not body:  # e.g. created empty file
        return "".join(head)
    return "".join(head + body)


# --------------------------------------------------------------------------- parsing

def _header_path(line: str) -> str:
    raw = line[4:].rstrip("\n").split("\t", 1)[0].rstrip("\r")
    return raw


def _strip_prefixes(old: str, new: str) -> tuple[str | None, str | None]:
    # git writes a/ and b/; plain diffs do not. Strip them only when the pair follows that convention,
    # so a repository whose top-level directory is called "a" is not mangled.
    git_style = all(p == DEV_NULL or p.startswith(q) for p, q in ((old, "a/"), (new, "b/")))
    out: list[str | None] = []
    for p in (old, new):
        if p == DEV_NULL:
            out.append(None)
        else:
            out.append(check_relpath(p[2:] if git_style else p))
    return out[0], out[1]


def parse_diff(text: str) -> list[FilePatch]:
    """Parse a (multi-file) unified diff; PatchError on anything malformed."""
    lines = split_lines(text)
    patches: list[FilePatch] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.startswith("--- "):
            if line.startswith(("@@", "+", "-", " ")) and patches == [] and line.strip():
                raise PatchError(f"diff line {i + 1}: hunk data before a file header")
            i += 1  # 'diff --git', 'index …', mode lines and free text are ignored
            continue
        if i + 1 >= len(lines) or not lines[i + 1].startswith("+++ "):
            raise PatchError(f"diff line {i + 1}: '---' without '+++'")
        old, new = _strip_prefixes(_header_path(line), _header_path(lines[i + 1]))
        if old is None and new is None:
            raise PatchError(f"diff line {i + 1}: both sides are {DEV_NULL}")
        fp = FilePatch(old, new)
        i += 2
        while i < len(lines) and lines[i].startswith("@@"):
            m = _HUNK_HEADER.match(lines[i])
            if not m:
                raise PatchError(f"diff line {i + 1}: bad hunk header {lines[i]!r}")
            hunk = Hunk(int(m[1]), int(m[2] or 1), int(m[3]), int(m[4] or 1))
            i += 1
            olds = news = 0
            while olds < hunk.old_len or news < hunk.new_len or (
                    i < len(lines) and lines[i].startswith("\\")):
                if i >= len(lines):
                    raise PatchError(f"{fp.path}: hunk ends early")
                body = lines[i]
                if body.startswith("\\"):
                    if not hunk.lines:
                        raise PatchError(f"diff line {i + 1}: stray no-newline marker")
                    hunk.lines[-1] = hunk.lines[-1].removesuffix("\n")
                elif body[:1] in (" ", "-", "+"):
                    olds += body[0] in " -"
                    news += body[0] in " +"
                    hunk.lines.append(body)
                elif body == "\n":  # some tools drop the space of an empty context line
                    olds, news = olds + 1, news + 1
                    hunk.lines.append(" \n")
                else:
                    raise PatchError(f"diff line {i + 1}: unexpected {body!r} inside a hunk")
                i += 1
            if olds != hunk.old_len or news != hunk.new_len:
                raise PatchError(f"{fp.path}: hunk line counts do not match its header")
            fp.hunks.append(hunk)
        patches.append(fp)
    return patches


# --------------------------------------------------------------------------- applying

def _apply_hunks(path: str, old_text: str, hunks: list[Hunk]) -> str:
    old = split_lines(old_text)
    out: list[str] = []
    pos = 0
    for k, hunk in enumerate(hunks, 1):
        start = hunk.old_start - 1 if hunk.old_len else hunk.old_start
        expected = [ln[1:] for ln in hunk.lines if ln[0] in " -"]
        if start < pos or old[start:start + len(expected)] != expected:
            raise PatchError(f"{path}: hunk #{k} does not apply at line {hunk.old_start}")
        out += old[pos:start]
        out += [ln[1:] for ln in hunk.lines if ln[0] in " +"]
        pos = start + len(expected)
    out += old[pos:]
    return "".join(out)


def apply_diff(text: str, files: dict[str, str]) -> dict[str, str | None]:
    """Apply a diff to `files` (relpath → text); returns the changed files (None = deleted)."""
    changed: dict[str, str | None] = {}
    current = dict(files)
    for fp in parse_diff(text):
        if fp.old_path is None:
            if fp.new_path in current and current[fp.new_path] is not None:
                raise PatchError(f"{fp.new_path}: created by the diff but already present")
            base = ""
        else:
            if current.get(fp.old_path) is None:
                raise PatchError(f"{fp.old_path}: patched by the diff but missing")
            base = current[fp.old_path]  # type: ignore[assignment]
        result = _apply_hunks(fp.path, base, fp.hunks)
        if fp.new_path is None:
            if result:
                raise PatchError(f"{fp.old_path}: deletion does not remove the whole file")
            changed[fp.old_path] = current[fp.old_path] = None  # type: ignore[index]
            continue
        if fp.old_path is not None and fp.old_path != fp.new_path:
            changed[fp.old_path] = current[fp.old_path] = None
        changed[fp.new_path] = current[fp.new_path] = result
    return changed


def touched_paths(text: str) -> list[str]:
    """Every path a diff reads or writes (old names first)."""
    seen: list[str] = []
    for fp in parse_diff(text):
        for p in (fp.old_path, fp.new_path):
            if p is not None and p not in seen:
                seen.append(p)
    return seen

"""Read a unified diff: which lines of which files it changed, on the new side, and each file's hunks.

Deleted lines are attributed to the new-side line where they stood, so a function that only lost lines
still counts as changed.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field

_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(?P<start>\d+)(?:,\d+)? @@")


class FileChange(BaseModel):
    """One file of a diff."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(description="New-side path, relative to the repo root.")
    lines: list[int] = Field(default_factory=list, description="New-side lines added, changed or next to a deletion.")
    text: str = Field("", description="This file's part of the diff.")
    deleted: bool = False


def _path(line: str) -> str:
    raw = line[4:].split("\t", 1)[0].strip()
    if raw == "/dev/null":
        return raw
    return raw[2:] if raw[:2] in ("a/", "b/") else raw


def parse_diff(text: str) -> list[FileChange]:
    """Files of a unified (git or plain) diff, in diff order."""
    files: list[FileChange] = []
    current: FileChange | None = None
    chunk: list[str] = []
    new_line = 0
    lines = text.splitlines(keepends=True)

    def close() -> None:
        if current is not None:
            current.text = "".join(chunk)
            current.lines = sorted(set(current.lines))

    for i, line in enumerate(lines):
        if line.startswith("diff --git "):
            close()
            current, chunk = None, [line]
            continue
        if line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            if current is not None:
                close()
                chunk = []
            new = _path(lines[i + 1])
            current = FileChange(path=_path(line) if new == "/dev/null" else new, deleted=new == "/dev/null")
            files.append(current)
            chunk.append(line)
            continue
        chunk.append(line)
        if current is None or line.startswith("+++ "):
            continue
        hunk = _HUNK.match(line)
        if hunk:
            new_line = int(hunk["start"])
        elif line.startswith("+"):
            current.lines.append(new_line)
            new_line += 1
        elif line.startswith("-"):
            current.lines.append(max(1, new_line))
        elif line.startswith(" ") or line in ("\n", ""):
            new_line += 1
    close()
    return files

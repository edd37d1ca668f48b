"""Read a model reply: whole-file writes, search/replace edits, and a `VERDICT: CODE_BUG` line.

The format the prompts ask for (templates/system.md):

    FILE: tests/test_x.py            EDIT: tests/test_x.py
    ```python                        ```
    <the whole file>                 <<<<<<< SEARCH
    ```                              <lines as they are now>
                                     =======
                                     <their replacement>
                                     >>>>>>> REPLACE
                                     ```

A header line may carry markdown decoration (`### FILE: x`, `**EDIT:** x`, the path in backticks). The verdict counts only
as a line of its own outside code fences, so a test that mentions the phrase in a string is not one.
A reply with no header and exactly one Python block that defines a test is taken as the whole file of
the default path: models often answer that way, and the meaning is unambiguous.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

_HEADER = re.compile(
    r"^\s*(?:#{1,6}\s*)?(?:\*\*)?(?P<kind>FILE|EDIT)\s*:\s*(?:\*\*)?\s*`?(?P<path>[^`*\s]+)`?\s*(?:\*\*)?\s*$")
_FENCE = re.compile(r"^\s*(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")
_VERDICT = re.compile(r"^\s*(?:\*\*)?VERDICT:\s*(?:\*\*)?\s*CODE_BUG\b\W*(?P<rest>.*)$")
_SEARCH = re.compile(r"^\s*<{5,9}\s*SEARCH\s*$")
_DIVIDER = re.compile(r"^\s*={5,9}\s*$")
_REPLACE = re.compile(r"^\s*>{5,9}\s*REPLACE\s*$")
_TEST_DEF = re.compile(r"^\s*(?:async\s+)?def\s+test|^\s*class\s+Test", re.MULTILINE)


class WholeFile(BaseModel):
    """Write `content` as the whole of `path`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["file"] = "file"
    path: str
    content: str


class SearchReplace(BaseModel):
    """Replace the one occurrence of `search` in `path` by `replace`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["edit"] = "edit"
    path: str
    search: str
    replace: str


Edit = WholeFile | SearchReplace


class ParsedReply(BaseModel):
    """What a reply asks for."""

    model_config = ConfigDict(extra="forbid")

    edits: list[Edit] = Field(default_factory=list, description="In reply order.")
    verdict: str | None = Field(None, description="The reason given after `VERDICT: CODE_BUG` ('' if none).")
    problems: list[str] = Field(default_factory=list, description="Blocks that could not be read.")


def _split_edit_body(path: str, lines: list[str]) -> tuple[list[SearchReplace], list[str]]:
    """The SEARCH/REPLACE sections of one EDIT block."""
    edits: list[SearchReplace] = []
    problems: list[str] = []
    state, search, replace = "out", [], []
    for line in lines:
        if state == "out":
            if _SEARCH.match(line):
                state, search, replace = "search", [], []
            elif line.strip():
                problems.append(f"EDIT {path}: text outside a SEARCH/REPLACE section: {line.strip()[:80]!r}")
        elif state == "search":
            if _DIVIDER.match(line):
                state = "replace"
            else:
                search.append(line)
        elif _REPLACE.match(line):
            edits.append(SearchReplace(path=path, search="".join(search), replace="".join(replace)))
            state = "out"
        else:
            replace.append(line)
    if state != "out":
        problems.append(f"EDIT {path}: a SEARCH/REPLACE section is not closed with '>>>>>>> REPLACE'")
    if not edits and not problems:
        problems.append(f"EDIT {path}: no '<<<<<<< SEARCH' section")
    return edits, problems


def parse_reply(text: str, *, default_path: str | None = None) -> ParsedReply:
    """Edits, verdict and unreadable blocks of a reply."""
    out = ParsedReply()
    lines = text.splitlines(keepends=True)
    header: tuple[str, str] | None = None
    anonymous: list[tuple[str, str]] = []  # (info string, body) of blocks without a header
    i = 0
    while i < len(lines):
        line = lines[i]
        fence = _FENCE.match(line)
        if fence is None and header is not None and header[0] == "EDIT" and _SEARCH.match(line):
            # An unfenced SEARCH/REPLACE section right after its header.
            end = i
            while end < len(lines) and not _REPLACE.match(lines[end]):
                end += 1
            _add_edit(out, header[1], lines[i:end + 1])
            header, i = None, end + 1
            continue
        if fence is None:
            match = _HEADER.match(line)
            verdict = _VERDICT.match(line)
            if match:
                header = (match["kind"], match["path"])
            elif verdict and out.verdict is None:
                out.verdict = verdict["rest"].strip()
            i += 1
            continue
        mark = fence["fence"]
        end = i + 1
        while end < len(lines) and not (lines[end].strip().startswith(mark[0] * len(mark))
                                        and not lines[end].strip().strip(mark[0])):
            end += 1
        body = lines[i + 1:end]
        if header is None:
            anonymous.append((fence["info"].strip().lower(), "".join(body)))
        elif header[0] == "FILE":
            out.edits.append(WholeFile(path=header[1], content="".join(body)))
        else:
            _add_edit(out, header[1], body)
        header, i = None, end + 1
    if header is not None:
        out.problems.append(f"{header[0]} {header[1]}: no code block follows the header")
    if not out.edits and default_path is not None:
        python = [body for info, body in anonymous if info in ("", "python", "py", "python3")]
        if len(python) == 1 and _TEST_DEF.search(python[0]):
            out.edits.append(WholeFile(path=default_path, content=python[0]))
    return out


def _add_edit(out: ParsedReply, path: str, body: list[str]) -> None:
    edits, problems = _split_edit_body(path, body)
    out.edits.extend(edits)
    out.problems.extend(problems)

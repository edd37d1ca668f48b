"""One requirement line from anywhere (a requirements file, tox deps, a nox install, a dependency group)
into something pip can install here, or a reason it cannot.

A snapshot is installed once, editable, by the plan itself; lines that install the project again (`-e .`,
`.[test]`) become extras of that install, and lines that point at things outside the snapshot or need a
tool's own substitution (`{posargs}`, local paths, URLs, pip options) are dropped with the reason, so the
plan a user reads says what was left out and why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from packaging.requirements import InvalidRequirement, Requirement
from pydantic import BaseModel, ConfigDict, Field

from repo2rlenv.discovery.project import normalize_name


class Dep(BaseModel):
    """A requirement and where it was found."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    spec: str = Field(description="A PEP 508 requirement, as pip receives it.")
    source: str = Field(description="Where it was declared, e.g. 'pyproject.toml [dependency-groups] test'.")


class Dropped(BaseModel):
    """A declared requirement the plan leaves out, and why."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    spec: str
    source: str
    reason: str


@dataclass(frozen=True, slots=True)
class Line:
    """What one line means: a requirement, extras of the project itself, a file to read, or a drop."""

    kind: str  # "req" | "extras" | "include" | "drop"
    value: str | tuple[str, ...]


_SELF = re.compile(r"^\.(?:/)?(?:\[([^\]]*)\])?$")  # `.`, `./`, `.[test,docs]`
# Pip options that carry no requirement (what to install comes from elsewhere in the line, if at all).
_OPTION_REASONS = (
    (re.compile(r"^(-c|--constraint)\b"), "a constraints file (versions only, nothing to install)"),
    (re.compile(r"^(-i|--index-url|--extra-index-url|-f|--find-links|--trusted-host|--pre|--no-binary|"
                r"--only-binary|--prefer-binary|--use-feature|--no-index)\b"), "a pip option, not a requirement"),
)


def applies_here(spec: str, python: str) -> bool:
    """Whether requirement `spec` installs at all under `python` (its environment marker holds)."""
    try:
        req = Requirement(spec)
    except InvalidRequirement:
        return False
    if req.marker is None:
        return True
    short = ".".join(python.split(".")[:2])
    return req.marker.evaluate({"python_version": short, "python_full_version": python,
                                "sys_platform": "linux", "platform_system": "Linux", "os_name": "posix",
                                "implementation_name": "cpython", "platform_python_implementation": "CPython",
                                "extra": ""})


def requirement_name(spec: str) -> str:
    """The normalised distribution name of a requirement line (its text up to the first non-name char)."""
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", spec)
    return normalize_name(match[1]) if match else ""


def strip_comment(line: str) -> str:
    line = re.sub(r"(^|\s)#.*$", "", line).strip()
    return re.sub(r"\s--hash[= ]\S+", "", line).strip()  # hash-pinned lock files


def classify(line: str, project_name: str | None) -> Line:
    """What a single requirement line means here."""
    text = strip_comment(line)
    if "{" in text or "${" in text:
        return Line("drop", "a tox/nox/pdm substitution that only that tool can expand")
    if match := re.match(r"^(-r|--requirement)\s*=?\s*(\S+)$", text):
        return Line("include", match[2])
    for pattern, reason in _OPTION_REASONS:
        if pattern.match(text):
            return Line("drop", reason)
    if match := re.match(r"^(-e|--editable)\s*=?\s*(\S+)$", text):
        own = _SELF.match(match[2])
        return Line("extras", tuple(_split_extras(own[1]))) if own else Line("drop", "an editable install of a path")
    if own := _SELF.match(text):
        return Line("extras", tuple(_split_extras(own[1])))
    if text.startswith("-"):
        return Line("drop", "a pip option, not a requirement")
    if text.startswith(("/", "./", "../", "file:")) or re.match(r"^[\w.-]+/", text):
        return Line("drop", "a local path (outside what the snapshot installs)")
    if "://" in text or text.startswith("git+"):
        return Line("drop", "a URL requirement (not from a package index)")
    try:
        req = Requirement(text)
    except InvalidRequirement:
        return Line("drop", "not a requirement pip understands")
    if req.url:
        return Line("drop", "a URL requirement (not from a package index)")
    if project_name and normalize_name(req.name) == normalize_name(project_name):
        return Line("extras", tuple(sorted(req.extras)))
    return Line("req", text)


def _split_extras(text: str | None) -> list[str]:
    return [e.strip() for e in (text or "").split(",") if e.strip()]


def logical_lines(text: str) -> list[str]:
    """Lines of a requirements file with `\\` continuations joined and blanks/comments removed."""
    joined = re.sub(r"\\\r?\n", " ", text)
    return [line for raw in joined.splitlines() if (line := strip_comment(raw))]


def read_requirement_file(root: Path, rel: str, seen: set[str] | None = None) -> tuple[list[str], list[str]]:
    """The lines of requirements file `rel` (relative to `root`) with `-r` includes inlined (paths relative
    to the including file, as pip reads them); returns (lines, files read). Includes outside the snapshot,
    missing files and cycles are left out."""
    seen = set() if seen is None else seen
    path = root / rel
    try:
        resolved = path.resolve()
        resolved.relative_to(root.resolve())
    except (OSError, ValueError):
        return [], []
    if rel in seen or not path.is_file():
        return [], []
    seen.add(rel)
    lines: list[str] = []
    files = [rel]
    for line in logical_lines(path.read_text(encoding="utf-8", errors="replace")):
        if match := re.match(r"^(-r|--requirement)\s*=?\s*(\S+)$", line):
            inner = _normalise((PurePosixPath(rel).parent / match[2]).as_posix())
            more, more_files = read_requirement_file(root, inner, seen)
            lines += more
            files += more_files
            continue
        lines.append(line)
    return lines, files


def _normalise(rel: str) -> str:
    parts: list[str] = []
    for part in PurePosixPath(rel).parts:
        if part == "..":
            if parts:
                parts.pop()
            else:
                return "../" + rel  # escapes the root: read_requirement_file refuses it
        elif part != ".":
            parts.append(part)
    return "/".join(parts)

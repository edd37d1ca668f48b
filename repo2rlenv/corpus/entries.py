"""The repositories of a corpus run: `--repos FILE` lines and repeated `--repo` flags.

A line is `SPEC [ref=REF] [KEY=VALUE ...]`: SPEC a local path, a git URL or owner/name, as for `--repo`;
`ref=` the branch, tag or commit; any other KEY=VALUE a pipeline option for this repo alone (over the
run's `--pipeline-opt`), `limit=N` being the repo's task limit. `#` starts a comment; blank lines are
skipped. A relative path is relative to the file. Every line is checked before anything runs: a bad one is one error naming its line.
"""

from __future__ import annotations

import hashlib
import re
import shlex
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from repo2rlenv.config import parse_opt_value
from repo2rlenv.errors import ConfigError
from repo2rlenv.sources import source_slug

_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class RepoEntry(BaseModel):
    """One repository of a corpus, as the user listed it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    spec: str = Field(description="Local path, git URL or owner/name.")
    ref: str | None = None
    options: dict[str, Any] = Field(default_factory=dict, description="Pipeline options for this repo alone.")
    where: str = Field("--repo", description="Where it was listed (`FILE:LINE` or `--repo`), for messages.")

    @property
    def name(self) -> str:
        """The run folder's name: readable, and the same on every rerun of the same list (it depends on
        the spec and ref only, not on the line's position)."""
        digest = hashlib.sha256(f"{self.spec}\0{self.ref or ''}".encode()).hexdigest()[:6]
        return f"{source_slug(self.spec)}-{digest}"


def parse_line(text: str, where: str, base: Path | None = None) -> RepoEntry | None:
    """The entry a line names, or None for a blank or comment line. A relative path is read from `base`
    (the file's directory), so a list works from any working directory."""
    try:
        words = shlex.split(text, comments=True)
    except ValueError as exc:
        raise ConfigError(f"{where}: cannot read the line ({exc})") from exc
    if not words:
        return None
    spec, ref, options = words[0], None, {}
    if base is not None and not Path(spec).expanduser().is_absolute() and (base / spec).exists():
        spec = str((base / spec).resolve())
    if spec.startswith(("/", "./", "../", "~")) and not Path(spec).expanduser().is_dir():
        raise ConfigError(f"{where}: no such directory: {spec}")
    if "=" in spec and not Path(spec).exists():
        raise ConfigError(f"{where}: the line must start with the repository, got {spec!r}")
    for word in words[1:]:
        key, sep, value = word.partition("=")
        if not sep or not _KEY.match(key):
            raise ConfigError(f"{where}: expected KEY=VALUE after the repository, got {word!r}")
        if key == "ref":
            ref = value or None
        else:
            options[key] = parse_opt_value(value)
    return RepoEntry(spec=spec, ref=ref, options=options, where=where)


def read_repos_file(path: Path) -> list[RepoEntry]:
    if not path.is_file():
        raise ConfigError(f"--repos file not found: {path}")
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--repos file cannot be read: {path} ({exc})") from exc
    entries = [parse_line(line, f"{path}:{n}", path.parent) for n, line in enumerate(lines, 1)]
    return [e for e in entries if e is not None]


def corpus_entries(repos: list[str], repos_file: Path | None) -> list[RepoEntry]:
    """The corpus's entries in order (the file's lines, then the flags), each repo once."""
    entries = read_repos_file(repos_file) if repos_file is not None else []
    entries += [RepoEntry(spec=spec) for spec in repos]
    if not entries:
        raise ConfigError(f"--repos file lists no repository: {repos_file}")
    seen: dict[str, RepoEntry] = {}
    for entry in entries:
        earlier = seen.get(entry.name)
        if earlier is not None:
            raise ConfigError(f"{entry.where}: {entry.spec}{' at ' + entry.ref if entry.ref else ''} is listed "
                              f"twice (also {earlier.where})")
        seen[entry.name] = entry
    return entries

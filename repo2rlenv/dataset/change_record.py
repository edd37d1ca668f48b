"""tests/change.json: what a real-history task's change says of itself, kept where B is.

A of a real-history task must carry nothing that leads back to the change (issue 33): not its commit, its
message, the changelog or news lines it added, nor its tests. The miner takes those from the parent; this
record lets the audit check that it worked, in the instruction, the build context and the built image, as
it checks B's and the oracle's text. It sits in `tests/`, which reaches a container only after the agent's
turn.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from repo2rlenv.dataset.leaks import MIN_CHANGED_TEXT

CHANGE_SCHEMA_VERSION = 1
# A line this short is too common to mean a leak when found (the audit's rule for the oracle's lines).
MIN_LINE = 2 * MIN_CHANGED_TEXT


class ChangeRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: int = CHANGE_SCHEMA_VERSION
    commit: str
    subject: str = Field("", description="The first line of the change's message.")
    added_lines: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Path → the lines the change added to that changelog, news, documentation or test file "
                    f"(stripped, at least {MIN_LINE} characters): A may hold none of them there, nor anywhere "
                    "it does not hold them anyway.")

    @classmethod
    def of(cls, commit: str, subject: str | None,
           files: list[tuple[dict[str, str | None], dict[str, str | None]]]) -> "ChangeRecord":
        """The record of a change: its commit, subject, and the lines it added to the files of `files`
        (pairs of path → the parent's text, path → the change's)."""
        added: dict[str, list[str]] = {}
        for before, after in files:
            for path, text in after.items():
                if text is None:
                    continue
                old = {line.strip() for line in (before.get(path) or "").splitlines()}
                lines = sorted({line.strip() for line in text.splitlines()
                                if len(line.strip()) >= MIN_LINE and line.strip() not in old})
                if lines:
                    added[path] = lines
        return cls(commit=commit, subject=subject or "", added_lines=added)

    @classmethod
    def read(cls, path: Path) -> "ChangeRecord | None":
        return cls.model_validate_json(path.read_text()) if path.is_file() else None

"""A run's journal: one line per decided candidate, appended as decisions are made.

A killed run leaves its decisions here; the rerun reads them back and skips the work already done. The
file name carries a key of everything that could change a decision (repo content, options), so a run
with other options never reuses stale verdicts.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Generic, TypeVar

from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)


def journal_key(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


class Journal(Generic[M]):
    """Append-only JSONL of pydantic records, keyed by an id field."""

    def __init__(self, path: Path, model: type[M], id_field: str):
        self.path = path
        self.model = model
        self.id_field = id_field

    def load(self) -> dict[str, M]:
        """Records by id; a torn last line (the run was killed mid-write) is ignored."""
        if not self.path.is_file():
            return {}
        out: dict[str, M] = {}
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                rec = self.model.model_validate_json(line)
            except ValidationError:
                continue
            out[getattr(rec, self.id_field)] = rec
        return out

    def append(self, record: M) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(record.model_dump_json() + "\n")
            fh.flush()

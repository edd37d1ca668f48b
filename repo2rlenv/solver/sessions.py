"""Solver sessions that outlive their process: the state after each completed round, saved to a store, so
a solve killed mid-way continues from its last completed round (`Solver.solve(..., store=, session_id=)`).

Three stores, one protocol: `MemoryStore` (a dict: tests, a trainer that keeps its process), `JsonStore`
(one JSON file per session in a directory, each write atomic), `SqlStore` (SQLAlchemy; SQLite by default,
any URL SQLAlchemy knows). What is saved is what the next round needs — the conversation kept for the
prompts, the files written, the plan, the baseline, the last round's signature — and, once the solve has
ended, its result: resuming a finished session returns that result without a call.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from repo2rlenv import atomic
from repo2rlenv.solver.result import SolveResult
from repo2rlenv.solver.target import Target

# History: 1 = first version.
SESSION_SCHEMA_VERSION = 1


class SavedMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    seq: int = Field(description="The message's seq in the trajectory it was first written to.")
    role: str
    content: str


class SessionState(BaseModel):
    """A solve after its last completed round."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = SESSION_SCHEMA_VERSION
    session_id: str
    target: Target
    round: int = Field(description="The last completed round (0: set-up and plan done, no round yet).")
    plan: str | None = None
    baseline: list[int] | None = Field(None, description="Function lines the existing suite runs, if measured.")
    head: list[SavedMessage] = Field(default_factory=list, description="System message and first request.")
    pairs: list[list[SavedMessage]] = Field(default_factory=list, description="(reply, feedback) per round.")
    files: dict[str, str] = Field(default_factory=dict)
    previous: list[Any] | None = Field(None, description="The last round's (failing, covered) signature.")
    result: SolveResult | None = Field(None, description="Set once the solve has ended.")


class SessionStore(Protocol):
    def load(self, session_id: str) -> SessionState | None: ...

    def save(self, state: SessionState) -> None: ...

    def delete(self, session_id: str) -> None: ...


class MemoryStore:
    def __init__(self) -> None:
        self._states: dict[str, str] = {}

    def load(self, session_id: str) -> SessionState | None:
        text = self._states.get(session_id)
        return SessionState.model_validate_json(text) if text is not None else None

    def save(self, state: SessionState) -> None:
        # Stored as JSON, as the other stores do: a caller's later change of `state` changes nothing here.
        self._states[state.session_id] = state.model_dump_json()

    def delete(self, session_id: str) -> None:
        self._states.pop(session_id, None)


def _safe_id(session_id: str) -> str:
    if not session_id or any(c in session_id for c in "/\\\0") or session_id in (".", ".."):
        raise ValueError(f"a session id must be a plain name, got {session_id!r}")
    return session_id


class JsonStore:
    """`DIR/<session_id>.json`, each save a whole-file rename."""

    def __init__(self, directory: Path):
        self.directory = Path(directory)

    def _path(self, session_id: str) -> Path:
        return self.directory / f"{_safe_id(session_id)}.json"

    def load(self, session_id: str) -> SessionState | None:
        path = self._path(session_id)
        return SessionState.model_validate_json(path.read_text(encoding="utf-8")) if path.is_file() else None

    def save(self, state: SessionState) -> None:
        atomic.write_text(self._path(state.session_id), state.model_dump_json(indent=1) + "\n")

    def delete(self, session_id: str) -> None:
        self._path(session_id).unlink(missing_ok=True)


class SqlStore:
    """A `solver_sessions` table (id, state as JSON) in any database SQLAlchemy reaches; SQLite by default.
    Needs the `sessions` extra (`pip install repo2rlenv[sessions]`)."""

    def __init__(self, url: str = "sqlite:///solver-sessions.db"):
        try:
            import sqlalchemy as sa
        except ImportError as exc:  # an optional extra
            raise RuntimeError("SqlStore needs SQLAlchemy: pip install 'sqlalchemy>=2'") from exc
        self._sa = sa
        self.engine = sa.create_engine(url)
        self.table = sa.Table("solver_sessions", sa.MetaData(), sa.Column("id", sa.String(200), primary_key=True),
                              sa.Column("state", sa.Text, nullable=False))
        self.table.metadata.create_all(self.engine)

    def load(self, session_id: str) -> SessionState | None:
        with self.engine.connect() as conn:
            row = conn.execute(self._sa.select(self.table.c.state).where(self.table.c.id == session_id)).first()
        return SessionState.model_validate_json(row[0]) if row else None

    def save(self, state: SessionState) -> None:
        text = state.model_dump_json()
        with self.engine.begin() as conn:  # one transaction: the old row or the new, never neither
            conn.execute(self.table.delete().where(self.table.c.id == state.session_id))
            conn.execute(self.table.insert().values(id=state.session_id, state=text))

    def delete(self, session_id: str) -> None:
        with self.engine.begin() as conn:
            conn.execute(self.table.delete().where(self.table.c.id == session_id))

"""The model-call ledger: one JSONL line per HTTP attempt, and the totals a spend ceiling is checked against.

Every attempt is recorded, failed ones included (a 429, a timeout), so the ledger shows what the run
really did. Token counts come from the API's `usage`; when a server sends none they are estimated and
the entry says so. `cost_usd` comes only from the user's prices (`prices.py`) and is None without one.
A failed attempt records no tokens and no cost: as far as the client can tell it was not billed (a
provider may still bill a request that timed out on our side; the ledger cannot see that).

The spend ceiling applies to one run: totals count the entries this `Ledger` recorded, not lines an
earlier run left in the same file (`read` returns those).
"""

from __future__ import annotations

import threading
from datetime import datetime, timezone
from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

# ledger.jsonl line format. 1: first version.
LEDGER_SCHEMA_VERSION = 1


class CallSource(StrEnum):
    """Where a reply came from."""

    API = "api"  # an HTTP call to the model
    REPLAY = "replay"  # served from a cassette: nothing sent, nothing spent


class LedgerEntry(BaseModel):
    """One attempt of one model call."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = Field(LEDGER_SCHEMA_VERSION, description="Format version of this line.")
    at: str = Field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="milliseconds"),
                    description="UTC time the attempt ended.")
    role: str = Field(description="What the call was for, e.g. 'oracle' or 'solver'.")
    model: str = Field(description="Model id as given to litellm.")
    attempt: int = Field(ge=1, description="1 for the first try of a call, 2 for its first retry, ...")
    ok: bool = Field(description="Whether this attempt returned a reply.")
    error: str | None = Field(None, description="Why it failed (exception class and message, shortened).")
    status_code: int | None = Field(None, description="HTTP status of a failed attempt, when there was one.")
    prompt_tokens: int | None = Field(None, ge=0, description="Input tokens (None for a failed attempt).")
    completion_tokens: int | None = Field(None, ge=0, description="Output tokens (None for a failed attempt).")
    tokens_estimated: bool = Field(False, description="The API sent no usage; the counts are estimates.")
    latency_sec: float = Field(ge=0, description="Wall clock of this attempt.")
    cost_usd: float | None = Field(None, description="From the user's prices; None when the model has no price.")
    request_key: str = Field(description="Identity of the request (model + messages), as in cassettes.")
    source: CallSource = Field(CallSource.API, description="api, or replay from a cassette.")


class LedgerTotals(BaseModel):
    """Sums over ledger entries."""

    model_config = ConfigDict(extra="forbid")

    attempts: int = Field(0, description="Entries (HTTP attempts and replays).")
    ok: int = Field(0, description="Attempts that returned a reply.")
    failed: int = Field(0, description="Attempts that did not.")
    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated: int = Field(0, description="Replies whose token counts are estimates.")
    unpriced: int = Field(0, description="Replies without a price, so missing from `cost_usd`.")
    cost_usd: float = Field(0.0, description="Sum of the known costs.")
    latency_sec: float = 0.0

    def add(self, entry: LedgerEntry) -> None:
        self.attempts += 1
        self.latency_sec += entry.latency_sec
        if not entry.ok:
            self.failed += 1
            return
        self.ok += 1
        self.prompt_tokens += entry.prompt_tokens or 0
        self.completion_tokens += entry.completion_tokens or 0
        self.estimated += entry.tokens_estimated
        if entry.cost_usd is None:
            self.unpriced += 1
        else:
            self.cost_usd += entry.cost_usd


class Ledger:
    """Appends entries to a JSONL file (when given a path) and keeps them for totals. Thread-safe."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self._entries: list[LedgerEntry] = []
        self._lock = threading.Lock()
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)

    def record(self, entry: LedgerEntry) -> None:
        line = entry.model_dump_json() + "\n"
        with self._lock:
            if self.path is not None:
                # One write per line in append mode: a killed run leaves whole lines behind.
                with self.path.open("a", encoding="utf-8") as fh:
                    fh.write(line)
            self._entries.append(entry)

    @property
    def entries(self) -> list[LedgerEntry]:
        with self._lock:
            return list(self._entries)

    def totals(self, role: str | None = None) -> LedgerTotals:
        """Totals over this run's entries, or over one role's."""
        out = LedgerTotals()
        for entry in self.entries:
            if role is None or entry.role == role:
                out.add(entry)
        return out

    def spent_usd(self) -> float:
        return self.totals().cost_usd

    @staticmethod
    def read(path: Path) -> list[LedgerEntry]:
        """Every entry in a ledger file (all runs that appended to it)."""
        lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
        return [LedgerEntry.model_validate_json(line) for line in lines if line.strip()]

"""Record and replay model replies, so an evaluation can be re-run deterministically without a server.

`RecordingClient` wraps a live client and appends each reply to a JSONL cassette under its request key
(`base.request_key`: model + messages). `ReplayClient` serves a cassette: the n-th identical request gets
the n-th recorded reply, and a request the recording never made raises `CassetteMiss`, because a
replay that silently improvised would no longer be the recorded run.
"""

from __future__ import annotations

import threading
from collections import defaultdict, deque
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from repo2rlenv.llm.base import ChatClient, Completion, Message, Usage, request_key
from repo2rlenv.llm.errors import CassetteMiss
from repo2rlenv.llm.ledger import CallSource, Ledger, LedgerEntry

# Cassette line format. 1: first version.
CASSETTE_SCHEMA_VERSION = 1


class CassetteEntry(BaseModel):
    """One recorded request and its reply."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = Field(CASSETTE_SCHEMA_VERSION, description="Format version of this line.")
    request_key: str = Field(description="`request_key(model, messages)` of the request.")
    role: str = Field(description="What the call was for.")
    model: str
    messages: list[Message] = Field(description="The request, kept for reading a cassette by eye.")
    text: str = Field(description="The reply's content.")
    usage: Usage
    finish_reason: str | None = None


class RecordingClient:
    """A `ChatClient` that passes calls to ``inner`` and appends every reply to ``cassette``."""

    def __init__(self, inner: ChatClient, cassette: Path) -> None:
        self.inner = inner
        self.cassette = cassette
        self._lock = threading.Lock()
        cassette.parent.mkdir(parents=True, exist_ok=True)

    @property
    def model(self) -> str:
        return self.inner.model

    def complete(self, messages: list[Message], *, role: str,
                 on_token: Callable[[str], None] | None = None) -> Completion:
        reply = self.inner.complete(messages, role=role, on_token=on_token)
        entry = CassetteEntry(request_key=reply.request_key, role=role, model=reply.model, messages=messages,
                              text=reply.text, usage=reply.usage, finish_reason=reply.finish_reason)
        with self._lock, self.cassette.open("a", encoding="utf-8") as fh:
            fh.write(entry.model_dump_json() + "\n")
        return reply


class ReplayClient:
    """A `ChatClient` answering from a cassette; sends nothing and spends nothing."""

    def __init__(self, cassette: Path, *, model: str | None = None, ledger: Ledger | None = None) -> None:
        """``model`` defaults to the cassette's (its first entry's); ``ledger`` gets one replay entry per reply."""
        if not cassette.is_file():
            raise CassetteMiss(f"no cassette at {cassette}")
        entries = [CassetteEntry.model_validate_json(line)
                   for line in cassette.read_text(encoding="utf-8").splitlines() if line.strip()]
        if model is None and not entries:
            raise CassetteMiss(f"cassette {cassette} is empty and no model was given")
        self._model = model or entries[0].model
        self.cassette = cassette
        self.ledger = ledger
        self._replies: dict[str, deque[CassetteEntry]] = defaultdict(deque)
        for entry in entries:
            self._replies[entry.request_key].append(entry)
        self._lock = threading.Lock()

    @property
    def model(self) -> str:
        return self._model

    def remaining(self) -> int:
        """Recorded replies not served yet."""
        with self._lock:
            return sum(len(q) for q in self._replies.values())

    def complete(self, messages: list[Message], *, role: str,
                 on_token: Callable[[str], None] | None = None) -> Completion:
        key = request_key(self._model, messages)
        with self._lock:
            queue = self._replies.get(key)
            if not queue:
                raise CassetteMiss(f"{self.cassette.name}: no recorded reply left for this {role} request "
                                   f"(key {key[:12]}); the run diverged from the recording")
            entry = queue.popleft()
        if self.ledger is not None:
            self.ledger.record(LedgerEntry(
                role=role, model=self._model, attempt=1, ok=True, prompt_tokens=entry.usage.prompt_tokens,
                completion_tokens=entry.usage.completion_tokens, tokens_estimated=entry.usage.estimated,
                latency_sec=0.0, cost_usd=0.0, request_key=key, source=CallSource.REPLAY))
        if on_token is not None and entry.text:
            on_token(entry.text)  # a recording has no arrival times: the whole reply at once
        return Completion(text=entry.text, usage=entry.usage, model=self._model, finish_reason=entry.finish_reason,
                          cost_usd=0.0, latency_sec=0.0, attempts=1, request_key=key)

"""What every chat client shares: the reply type, the client Protocol, the request key and token estimates.

`LLMClient` (a live model through litellm), `RecordingClient` and `ReplayClient` all satisfy `ChatClient`,
so code that talks to a model (the LLM oracle, the solver) takes any of them.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field

Message = dict[str, str]  # {"role": "system" | "user" | "assistant", "content": "..."}

# Rough size of English/code text in tokens for OpenAI-style tokenizers; used only when a server reports
# no usage, and every such number is flagged as an estimate. (A real tokenizer would mean downloading
# its tables at run time, which a sandboxed or offline machine cannot do.)
CHARS_PER_TOKEN = 4
TOKENS_PER_MESSAGE = 4  # role and separators around each message


class Usage(BaseModel):
    """Tokens of one call, as the API reported them or, when it did not, as estimated."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    prompt_tokens: int = Field(ge=0, description="Input tokens.")
    completion_tokens: int = Field(ge=0, description="Output tokens.")
    estimated: bool = Field(False, description="The API reported no usage; these counts are estimates.")


class Completion(BaseModel):
    """One model reply."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str = Field(description="The assistant message's content ('' when it had none).")
    usage: Usage
    model: str = Field(description="The model id the call was made with.")
    finish_reason: str | None = Field(None, description="Why generation stopped ('stop', 'length', ...).")
    cost_usd: float | None = Field(None, description="From the user's prices; None when the model has none.")
    latency_sec: float = Field(0.0, ge=0, description="Wall clock of the successful attempt.")
    attempts: int = Field(1, ge=1, description="HTTP attempts this reply took (retries + 1).")
    request_key: str = Field(description="`request_key(model, messages)`: links ledger, cassette and reply.")


class ChatClient(Protocol):
    """Anything that answers a chat: `complete(messages, role=...)` returns a `Completion`."""

    @property
    def model(self) -> str: ...

    def complete(self, messages: list[Message], *, role: str,
                 on_token: Callable[[str], None] | None = None) -> Completion:
        """One reply; with `on_token`, each piece of its text as it arrives (all at once when the
        client cannot stream)."""
        ...


def request_key(model: str, messages: list[Message]) -> str:
    """sha256 of the model id and the messages: the identity of a request for record and replay.

    Sampling parameters are left out on purpose, so a cassette recorded at one temperature replays
    at any other; the endpoint and the key are left out so it replays without any server.
    """
    canonical = json.dumps({"model": model, "messages": messages}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def estimate_text_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def estimate_prompt_tokens(messages: list[Message]) -> int:
    return sum(TOKENS_PER_MESSAGE + estimate_text_tokens(str(m.get("content") or "")) for m in messages)

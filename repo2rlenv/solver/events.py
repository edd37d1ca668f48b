"""What a solve reports while it runs: hooks for live progress, and the JSONL trajectory of every turn.

Hooks are plain callbacks (the CLI prints with them; a trainer may stream them elsewhere):
- `on_stream(role, piece)`: model text as it arrives — with this hook set the reply is streamed, and each
  piece comes as the provider sends it (a client that cannot stream hands over the whole reply at once);
- `on_reply(role, text)`: the whole reply, once it is complete;
- `on_tool_call(event)` / `on_tool_result(event)`: the agent's actions (write a file, run the tests);
- `on_round_end(summary)`: one line's worth per generate/repair round;
- `on_finish(result)`: the `SolveResult`, once the solve has ended.

The trajectory holds every message (system, user, assistant — each assistant turn with its model, usage,
cost and the ids of the messages it was answering), every tool call and result, and the stop. Replaying
the message events of one call gives exactly the request the model saw: usable as SFT or RL data.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

# trajectory.jsonl line format. 1: first version.
TRAJECTORY_SCHEMA_VERSION = 1


class EventKind(StrEnum):
    MESSAGE = "message"
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"
    STOP = "stop"


class TrajectoryEvent(BaseModel):
    """One line of trajectory.jsonl."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = Field(TRAJECTORY_SCHEMA_VERSION, description="Format version of this line.")
    seq: int = Field(description="Position in the trajectory, from 0.")
    at: str = Field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="milliseconds"))
    round: int = Field(description="0 for set-up and planning, then 1, 2, ... per generate/repair round.")
    kind: EventKind
    role: str | None = Field(None, description="system, user or assistant (messages).")
    call_role: str | None = Field(None, description="plan, generate or repair (assistant messages).")
    content: str | None = Field(None, description="The message text.")
    request: list[int] | None = Field(None, description="Seqs of the messages an assistant turn answered.")
    model: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost_usd: float | None = None
    tool: str | None = Field(None, description="Tool name (tool events).")
    data: dict[str, Any] | None = Field(None, description="Tool arguments or results, stop details.")


@dataclass(frozen=True, slots=True)
class ToolEvent:
    """A tool call, or its result (then `ok` and `result` are set)."""

    round: int
    tool: str
    args: dict[str, Any]
    ok: bool | None = None
    result: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class RoundSummary:
    """How one round ended."""

    round: int
    role: str
    outcome: str  # "tests" | "edit_error" | "no_edits" | "lint" | "verdict"
    summary: str
    passed: int = 0
    failing: int = 0
    new_coverage: int = 0
    targets: int = 0
    tokens: int = 0


@dataclass(slots=True)
class SolverHooks:
    """Optional callbacks; an exception in one is the caller's bug and propagates."""

    on_stream: Callable[[str, str], None] | None = None
    on_reply: Callable[[str, str], None] | None = None
    on_tool_call: Callable[[ToolEvent], None] | None = None
    on_tool_result: Callable[[ToolEvent], None] | None = None
    on_round_end: Callable[[RoundSummary], None] | None = None
    on_finish: Callable[[Any], None] | None = None  # the SolveResult, once the solve has ended


class Trajectory:
    """Collects events and appends each to a JSONL file (when given a path) as it happens."""

    def __init__(self, path: Path | None = None):
        self.path = path
        self.events: list[TrajectoryEvent] = []
        self._lock = threading.Lock()
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)

    def add(self, **fields: Any) -> TrajectoryEvent:
        with self._lock:
            event = TrajectoryEvent(seq=len(self.events), **fields)
            self.events.append(event)
            if self.path is not None:
                # One write per line in append mode: a killed solve leaves whole lines behind.
                with self.path.open("a", encoding="utf-8") as fh:
                    fh.write(event.model_dump_json(exclude_none=True) + "\n")
        return event

    def continue_file(self) -> None:
        """Continue the file an earlier, interrupted solve wrote (a resumed session): its events are read
        back so the numbering goes on where it stopped."""
        with self._lock:
            if self.path is not None and not self.events:
                self.events = self.read(self.path)

    @staticmethod
    def read(path: Path) -> list[TrajectoryEvent]:
        lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
        return [TrajectoryEvent.model_validate_json(line) for line in lines if line.strip()]

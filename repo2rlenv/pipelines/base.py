"""What a pipeline is: a Protocol, the context it runs in, and the result it returns.

A pipeline owns one kind of task. The CLI resolves the source and the sandbox, validates options with
the pipeline's own `options_model`, and calls `run`. Results count every candidate's fate by reason, so
a run always ends with a table of where candidates went.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol, runtime_checkable

from pydantic import BaseModel

from repo2rlenv.config import GenerateConfig
from repo2rlenv.progress import Reporter
from repo2rlenv.sandbox.base import Sandbox
from repo2rlenv.sources import RepoSource


@dataclass(slots=True)
class RunContext:
    """Everything a pipeline run may use; built by the CLI (or a test)."""

    config: GenerateConfig
    source: RepoSource
    commit: str | None
    sandbox: Sandbox
    out_dir: Path
    work_dir: Path
    reporter: Reporter
    # The model check's calls (`llm/preflight.py`), made before the run: its ledger starts with them.
    model_checks: list[Any] = field(default_factory=list)


@dataclass(slots=True)
class PipelineResult:
    """What a run produced, with counts per stage and per skip reason."""

    emitted: list[str] = field(default_factory=list)
    stages: Counter[str] = field(default_factory=Counter)
    skip_reasons: Counter[str] = field(default_factory=Counter)
    details: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "emitted": list(self.emitted),
            "stages": dict(self.stages),
            "skip_reasons": dict(self.skip_reasons),
            **self.details,
        }


@runtime_checkable
class Pipeline(Protocol):
    """A task generator. `name` keys the registry; `options_model` validates `--pipeline-opt`."""

    name: ClassVar[str]
    version: ClassVar[str]
    options_model: ClassVar[type[BaseModel]]

    def run(self, ctx: RunContext, options: BaseModel) -> PipelineResult: ...

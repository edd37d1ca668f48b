"""What crosses the corpus's boundaries: a job sent to a worker, the outcome it returns, the journal's
records and the dataset's summary.json. Jobs and outcomes travel as JSON (to Ray workers and back)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from repo2rlenv.config import GenerateConfig

# History: 1 = first version. 2 = duplicates merged (totals.merged, each repo's `merged`).
CORPUS_SUMMARY_SCHEMA_VERSION = 2

RepoStatus = Literal["done", "failed", "not_run"]


class RepoJob(BaseModel):
    """One repo's run: the whole generate configuration, its `out` being the repo's run folder."""

    model_config = ConfigDict(extra="forbid")

    name: str
    config: GenerateConfig


class RepoOutcome(BaseModel):
    """How one repo's run ended."""

    model_config = ConfigDict(extra="forbid")

    name: str
    repo: str = Field(description="The spec as listed.")
    ref: str | None = None
    status: RepoStatus
    stage_reached: str = Field(description="The last stage entered; `done` when the run finished.")
    limit: int | None = Field(None, description="The task budget the repo was given.")
    emitted: list[str] = Field(default_factory=list)
    merged: dict[str, str] = Field(default_factory=dict, description="Emitted tasks merged into a duplicate kept "
                                   "in the dataset (task id → kept id; dedup.json says why).")
    funnel: dict[str, int] = Field(default_factory=dict, description="Candidates per stage (the run's summary).")
    skip_reasons: dict[str, int] = Field(default_factory=dict)
    error: str | None = Field(None, description="The failure's cause, in words a user can act on.")
    log: str | None = Field(None, description="The failure's full output, relative to the dataset root.")
    advice: str | None = Field(None, description="Why fewer tasks than the limit came out, when known.")
    attempts: int = Field(1, description="Runs of this repo, a lost worker's included.")
    duration_sec: float = 0.0


Event = tuple[str, str, str]  # a worker's progress: (repo name, stage, note)


@dataclass(slots=True)
class Finished:
    """A job an executor has finished, its run folder complete under the dataset's runs/."""

    job: RepoJob
    outcome: RepoOutcome


class CorpusRecord(BaseModel):
    """A line of the corpus journal. Written without `outcome` when a repo is handed to a worker (a rerun
    gives an unfinished repo the same budget), and with it once the repo's tasks are published; the last
    line of a name is its state."""

    model_config = ConfigDict(extra="forbid")

    name: str
    limit: int
    settings: str = Field("", description="Key of the repo's own options (limit aside): a line whose options "
                          "changed is a new repo to the journal.")
    outcome: RepoOutcome | None = None


class CorpusTotals(BaseModel):
    model_config = ConfigDict(extra="forbid")

    repos: int
    done: int
    failed: int
    not_run: int
    emitted: int
    merged: int = Field(0, description="Emitted tasks merged into duplicates; tasks/ holds emitted − merged.")


class CorpusSummary(BaseModel):
    """The dataset's summary.json after a corpus run."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = CORPUS_SUMMARY_SCHEMA_VERSION
    kind: Literal["corpus"] = "corpus"
    executor: str
    max_tasks: int | None
    driver_sec: float = Field(0.0, description="This run's driver work after repos ended: publishing tasks, "
                              "the manifest, the journal (the overhead a corpus adds to its repos' runs).")
    totals: CorpusTotals
    repos: list[RepoOutcome]

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

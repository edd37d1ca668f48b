"""The scoring service's boundary: what a client sends and what it gets back, as pydantic models.

`POST /score` answers with `repo2rlenv.scoring.models.Score` itself (not a copy of it), so a score read
over HTTP is the same model a `DatasetScorer` returns in-process. Everything else the service says is here.

API_VERSION history:
  1 - POST /score, GET /health, GET /metrics (issue 35).
  2 - waiting requests for one task are scored in groups: /health says `group`, /metrics `group_sizes`.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

API_VERSION = 2


class ScoreRequest(BaseModel):
    """The body of `POST /score`. Both fields are required: a client that forgot `source` gets a 400, not
    the score of an empty submission."""

    model_config = ConfigDict(extra="forbid")

    task_id: str = Field(min_length=1, description="a task directory's name under the dataset's tasks/")
    source: str | None = Field(description="the test file's text; null: no file (scored as an empty submission)")


class ErrorBody(BaseModel):
    """Every non-200 answer: one line saying what was wrong."""

    model_config = ConfigDict(extra="forbid")

    error: str = Field(description="one line, written for the client's log")
    retry_after_sec: int | None = Field(None, description="on 429: seconds to wait (also the Retry-After header)")


class Health(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ok: bool = Field(description="the service accepts scores (false while it shuts down)")
    api_version: int = Field(API_VERSION, description="this module's API_VERSION; bumped on a breaking change")
    version: str = Field(description="repo2rlenv's version")
    tasks: int = Field(description="tasks in the dataset being served")
    concurrency: int = Field(description="scores that run at once")
    queue: int = Field(description="requests that may wait for a slot beyond those; more are answered 429")
    group: int = Field(description="the most waiting requests for one task scored together (1: each alone)")


class Latency(BaseModel):
    model_config = ConfigDict(extra="forbid")

    p50: float | None = Field(description="median seconds from admission to answer; None before any score")
    p99: float | None = Field(description="99th percentile, same window")
    window: int = Field(description="how many recent scores the percentiles are over")


class ServiceMetrics(BaseModel):
    """`GET /metrics`."""

    model_config = ConfigDict(extra="forbid")

    api_version: int = API_VERSION
    uptime_sec: float
    scores_total: int = Field(description="scores answered (verdicts and infrastructure failures)")
    scores_per_sec: float = Field(description="scores answered per second over the last minute (or the uptime)")
    in_flight: int = Field(description="admitted requests not yet answered, running or waiting")
    queue_depth: int = Field(description="admitted requests waiting for a slot")
    capacity: int = Field(description="concurrency + queue: the most requests admitted at once")
    latency_sec: Latency
    failures: dict[str, int] = Field(description="scores with no reward, by ScoreError kind")
    rejected: dict[str, int] = Field(description="requests answered without a score, by reason "
                                                 "(busy, bad_request, unauthorized, too_large, not_found)")
    group_sizes: dict[str, int] = Field(description="gradings since start by how many requests each scored "
                                                    "together (\"1\": alone); groups form only under load")

"""What one score is: the verifier's verdict, or why there is none.

A score either carries the reward `tests/test.sh` wrote (a verdict, 0.0 included) or an `error` naming the
infrastructure that failed before a verdict existed. Trainers must be able to tell the two apart: a 0
that stands for "Docker was down" would teach a policy that good tests score nothing.
"""

from __future__ import annotations

from enum import Enum

from pydantic import BaseModel, ConfigDict, Field

from repo2rlenv.verifiers.config_model import CaseResult, RewardDetails


class ScoreError(str, Enum):
    """Why a score has no reward. None of these is the submission's fault."""

    build = "build"  # the task's environment image could not be built
    sandbox = "sandbox"  # a container could not be started, written to or run in
    timeout = "timeout"  # test.sh ran past the task's verifier timeout (Harbor records no reward then)
    no_reward = "no_reward"  # test.sh finished but left no readable reward.txt
    verifier = "verifier"  # the verifier stopped on an internal error (details.fault): no verdict on the submission
    node = "node"  # the scoring node or its worker was lost (RayDatasetScorer) and no other could take the request


class Score(BaseModel):
    """One submission's score on one task."""

    model_config = ConfigDict(extra="forbid")

    task_id: str
    reward: float | None = Field(description="reward.txt as test.sh wrote it; None exactly when `error` is set")
    details: RewardDetails | None = Field(None, description="reward-details.json, when the verifier wrote one "
                                                             "that reads as the current schema")
    error: ScoreError | None = None
    message: str = Field("", description="the error in words, or why the details are missing")
    duration_sec: float = Field(0.0, description="wall clock of this score, waiting for a container included")

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def b_pass(self) -> float | None:
        return self.details.b_pass if self.details else None

    @property
    def b_fail(self) -> float | None:
        return self.details.b_fail if self.details else None

    @property
    def cov(self) -> float | None:
        return self.details.cov if self.details else None

    @property
    def mutation_score(self) -> float | None:
        return self.details.mutation_score if self.details else None

    @property
    def reason(self) -> str | None:
        """Why the reward is 0, as the verifier put it."""
        return self.details.reason if self.details else None

    @property
    def cases(self) -> list[CaseResult]:
        """Each collected case and its outcome on A and every hidden variant."""
        return list(self.details.cases) if self.details else []

    def summary(self) -> dict[str, float | str | None]:
        """Flat scalars, for a trainer's per-sample log (the same keys for every score)."""
        return {"reward": self.reward, "b_pass": self.b_pass, "b_fail": self.b_fail, "cov": self.cov,
                "mutation_score": self.mutation_score, "error": self.error.value if self.error else None}

"""How a solve ended: the stop reason, the files written, the last test run, and what it cost."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from repo2rlenv.solver.target import Target
from repo2rlenv.solver.testrun import TestReport

# SolveResult format. 1: first version. 2: unverified (what the run's settings left unchecked).
SOLVE_RESULT_SCHEMA_VERSION = 2


class StopReason(StrEnum):
    """Why the loop stopped, in the order the loop checks them."""

    SOLVED = "solved"  # every test passes and they add coverage (or there is none to add)
    CODE_BUG = "code_bug"  # the model answered VERDICT: CODE_BUG
    NO_PROGRESS = "no_progress"  # the same failing set (and coverage) two rounds running
    ROUND_LIMIT = "round_limit"
    TOKEN_BUDGET = "token_budget"
    SPEND_LIMIT = "spend_limit"  # checked before every call, and raised by the client past the ceiling
    MODEL_ERROR = "model_error"  # a call failed for good (retries exhausted, refused request)


class SolveResult(BaseModel):
    """The outcome of one solve."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = SOLVE_RESULT_SCHEMA_VERSION
    target: Target
    stop_reason: StopReason
    detail: str = Field("", description="More on the stop: the verdict's reason, the model error.")
    rounds: int = Field(description="Generate/repair calls made.")
    plan: str | None = Field(None, description="The planning call's reply.")
    verdict: str | None = Field(None, description="The reason given with VERDICT: CODE_BUG.")
    files: dict[str, str] = Field(default_factory=dict, description="Path → final text of each file written.")
    last_report: TestReport | None = Field(None, description="The last run of the tests.")
    calls: int = Field(0, description="Model calls that returned a reply.")
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = Field(0.0, description="Sum of priced calls.")
    unpriced_calls: int = Field(0, description="Calls without a price, missing from cost_usd.")
    duration_sec: float = 0.0
    unverified: list[str] = Field(default_factory=list, description="What this solve did not check, by its "
                                  "settings (--no-coverage, --pytest-k, --pytest-m).")

    @property
    def solved(self) -> bool:
        return self.stop_reason is StopReason.SOLVED

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

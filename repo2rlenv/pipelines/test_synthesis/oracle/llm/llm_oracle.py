"""The LLM oracle: ask a model for a test file, judge it as the verifier would, feed the verdict back, retry.

Each attempt is one model reply: its code block is extracted and judged (`check.judge_file`: compile,
line budget, the verifier's lint, then runs on A and B). A file whose every case passes on A and fails
on B is accepted; otherwise the model sees the feedback (`prompt.feedback_message`) in the same
conversation and tries again, up to `max_attempts`. A spend ceiling or a failed model call ends the
synthesis with a recorded reason instead of an exception, so the pipeline keeps what it has; only a
configuration error (bad key, unknown model) propagates, since no later candidate could do better.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from repo2rlenv.llm.base import ChatClient, Completion
from repo2rlenv.llm.errors import LLMCallFailed, SpendLimitReached
from repo2rlenv.pipelines.test_synthesis.oracle.differential.differential import Runner
from repo2rlenv.pipelines.test_synthesis.oracle.llm.check import Judgement, Verdict, judge_file
from repo2rlenv.pipelines.test_synthesis.oracle.llm.context import OracleContext
from repo2rlenv.pipelines.test_synthesis.oracle.llm.extract import NoCodeBlock, extract_code
from repo2rlenv.pipelines.test_synthesis.oracle.llm.prompt import feedback_message, initial_messages

ROLE = "oracle"


class LLMNoOracle(StrEnum):
    """Why the LLM oracle produced nothing (the strings counted in skip summaries)."""

    NOT_SEPARATED = "llm tests did not separate the versions"
    LLM_FAILED = "model call failed"
    SPEND_LIMIT = "spend limit reached"


class Attempt(BaseModel):
    """One reply and what became of it."""

    model_config = ConfigDict(extra="forbid")

    number: int = Field(ge=1)
    verdict: Verdict
    detail: str | None = Field(None, description="Static-check findings or run failure.")
    test_source: str | None = Field(None, description="The extracted file (None when there was no code block).")
    on_a: dict[str, str] = Field(default_factory=dict, description="Test name -> outcome on A.")
    on_b: dict[str, str] = Field(default_factory=dict, description="Test name -> outcome on B.")
    feedback: str | None = Field(None, description="What the model was told next (None for the last attempt).")
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tokens_estimated: bool = False
    cost_usd: float | None = None


class LLMOracleResult(BaseModel):
    """What `synthesize_llm` produced, or why it produced nothing; `attempts` is the provenance."""

    model_config = ConfigDict(extra="forbid")

    found: bool
    reason: str | None = Field(None, description="An `LLMNoOracle` value when nothing was found.")
    detail: str | None = Field(None, description="More about the reason.")
    test_source: str | None = Field(None, description="The accepted test file.")
    n_tests: int = Field(0, description="Test cases in `test_source`.")
    model: str = Field(description="The model that wrote it.")
    attempts: list[Attempt] = Field(default_factory=list)
    spend_limited: bool = Field(False, description="Stopped by the spend ceiling: later candidates will be too.")

    @property
    def prompt_tokens(self) -> int:
        return sum(a.prompt_tokens for a in self.attempts)

    @property
    def completion_tokens(self) -> int:
        return sum(a.completion_tokens for a in self.attempts)

    @property
    def cost_usd(self) -> float | None:
        """Total cost of the attempts; None when any of them had no price."""
        costs = [a.cost_usd for a in self.attempts]
        return None if any(c is None for c in costs) else sum(c for c in costs if c is not None)


def _attempt(number: int, reply: Completion, source: str | None, judgement: Judgement, feedback: str | None) -> Attempt:
    return Attempt(
        number=number, verdict=judgement.verdict, detail=judgement.detail, test_source=source,
        on_a=judgement.on_a, on_b=judgement.on_b, feedback=feedback, prompt_tokens=reply.usage.prompt_tokens,
        completion_tokens=reply.usage.completion_tokens, tokens_estimated=reply.usage.estimated,
        cost_usd=reply.cost_usd,
    )


def synthesize_llm(
    *,
    client: ChatClient,
    runner: Runner,
    context: OracleContext,
    max_attempts: int = 3,
    role: str = ROLE,
) -> LLMOracleResult:
    """Up to ``max_attempts`` replies, each judged on A and B through ``runner``; the first accepted file wins.

    Exceptions raised by ``runner`` itself (other than a probe or sandbox failure, which count as a
    failed run) propagate, as in the differential oracle; so does `LLMConfigError`.
    """
    messages = initial_messages(context)
    attempts: list[Attempt] = []

    def stop(reason: LLMNoOracle, detail: str, **extra: bool) -> LLMOracleResult:
        return LLMOracleResult(found=False, reason=reason, detail=detail, model=client.model, attempts=attempts,
                               **extra)

    for number in range(1, max_attempts + 1):
        try:
            reply = client.complete(messages, role=role)
        except SpendLimitReached as exc:
            return stop(LLMNoOracle.SPEND_LIMIT, str(exc), spend_limited=True)
        except LLMCallFailed as exc:
            return stop(LLMNoOracle.LLM_FAILED, str(exc))
        source: str | None = None
        try:
            source = extract_code(reply.text)
            judgement = judge_file(runner, source, context.test_path, max_test_loc=context.max_test_loc,
                                   min_cases=context.min_new_tests)
        except NoCodeBlock as exc:
            judgement = Judgement(verdict=Verdict.NO_CODE, detail=str(exc))
        if judgement.verdict is Verdict.ACCEPTED:
            attempts.append(_attempt(number, reply, source, judgement, None))
            return LLMOracleResult(found=True, test_source=source, n_tests=len(judgement.cases), model=client.model,
                                   attempts=attempts)
        feedback = feedback_message(judgement) if number < max_attempts else None
        attempts.append(_attempt(number, reply, source, judgement, feedback))
        if feedback is not None:
            messages = [*messages, {"role": "assistant", "content": reply.text}, {"role": "user", "content": feedback}]
    last = attempts[-1]
    detail = f"after {len(attempts)} attempt(s): {last.verdict.value}"
    return stop(LLMNoOracle.NOT_SEPARATED, detail + (f" ({last.detail[:200]})" if last.detail else ""))

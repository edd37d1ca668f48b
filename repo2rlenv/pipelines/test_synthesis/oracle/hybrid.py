"""The hybrid oracle: the differential oracle first (no model, no cost), the LLM oracle when it finds nothing.

With no client this is the differential oracle alone, so one call serves `oracle=differential`,
`oracle=hybrid` and `oracle=auto`; `oracle=llm` calls `synthesize_llm` directly.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from repo2rlenv.llm.base import ChatClient
from repo2rlenv.pipelines.test_synthesis.oracle.differential.differential import (
    DifferentialResult,
    Limits,
    Runner,
    synthesize_differential,
)
from repo2rlenv.pipelines.test_synthesis.oracle.llm.context import OracleContext
from repo2rlenv.pipelines.test_synthesis.oracle.llm.llm_oracle import LLMOracleResult, synthesize_llm


class OracleSource(StrEnum):
    """Which oracle wrote the accepted file (`oracle_kind` in task.toml)."""

    DIFFERENTIAL = "differential"
    LLM = "llm"


class HybridResult(BaseModel):
    """The accepted file and where it came from, or why there is none; both oracles' own results."""

    model_config = ConfigDict(extra="forbid")

    found: bool
    kind: OracleSource | None = Field(None, description="The oracle that wrote `test_source`.")
    test_source: str | None = None
    n_tests: int = 0
    reason: str | None = Field(None, description="Why nothing was found: the last oracle's reason.")
    detail: str | None = None
    differential: DifferentialResult
    llm: LLMOracleResult | None = Field(None, description="Set when the LLM oracle ran.")

    @property
    def attempts(self) -> int:
        """Model replies spent on this candidate (0 when the differential oracle sufficed)."""
        return len(self.llm.attempts) if self.llm is not None else 0

    @property
    def synthesis_llm(self) -> str | None:
        """The model that wrote the accepted file, if a model did."""
        return self.llm.model if self.kind is OracleSource.LLM and self.llm is not None else None


def synthesize_hybrid(
    *,
    client: ChatClient | None,
    runner: Runner,
    context: OracleContext,
    covering_tests: list[str],
    max_attempts: int = 3,
    seed: int = 0,
    limits: Limits | None = None,
) -> HybridResult:
    """Differential on ``context``'s function and covering tests; then, if it found nothing and a client is
    given, the LLM oracle. Exceptions raised by ``runner`` itself propagate."""
    diff = synthesize_differential(
        runner=runner, target_file=context.target_file, module=context.module, qualname=context.qualname,
        function_source_a=context.function_source, covering_tests=covering_tests, max_tests=context.max_tests,
        seed=seed, test_path=context.test_path, max_loc=context.max_test_loc, limits=limits,
    )
    if diff.found:
        return HybridResult(found=True, kind=OracleSource.DIFFERENTIAL, test_source=diff.test_source,
                            n_tests=diff.n_tests, differential=diff)
    if client is None:
        return HybridResult(found=False, reason=diff.reason, detail=diff.detail, differential=diff)
    llm = synthesize_llm(client=client, runner=runner, context=context, max_attempts=max_attempts)
    if llm.found:
        return HybridResult(found=True, kind=OracleSource.LLM, test_source=llm.test_source, n_tests=llm.n_tests,
                            differential=diff, llm=llm)
    detail = f"differential: {diff.reason}" + (f" ({diff.detail})" if diff.detail else "")
    detail += f"; llm: {llm.detail or llm.reason}"
    return HybridResult(found=False, reason=llm.reason, detail=detail, differential=diff, llm=llm)

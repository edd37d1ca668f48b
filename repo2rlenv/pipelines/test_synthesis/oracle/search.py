"""The oracle stage's entry point: the reference tests for a gated candidate, and more of them for a sibling
the first ones miss.

`find_oracle` serves every `oracle` option: `llm` asks the model alone; `differential`, `hybrid` and
`auto` go through `synthesize_hybrid`, the differential oracle first (no model, no cost) and the LLM
oracle when it finds nothing and a client is given. Before it, the driver asks `find_human` for a real
change that carried its own tests (`human.py`, issue 33), records its answer, and falls back to
`find_oracle` when it gives none. `extend_oracle` is the model-free search run for a
sibling (`gate/siblings.py`), merged into the oracle. Both return what they found or a `Drop`/None; they
never touch the candidate.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from repo2rlenv.baseline.runner import SuiteRunner
from repo2rlenv.dataset.task_toml import origin_of_kind
from repo2rlenv.llm.base import ChatClient
from repo2rlenv.pipelines.test_synthesis.candidates import Candidate, Drop, SkipReason
from repo2rlenv.pipelines.test_synthesis.options import TestSynthesisOptions
from repo2rlenv.pipelines.test_synthesis.oracle.differential.differential import (
    DifferentialResult,
    Limits,
    Runner,
    synthesize_differential,
)
from repo2rlenv.pipelines.test_synthesis.oracle.llm.context import OracleContext, context_for_candidate
from repo2rlenv.pipelines.test_synthesis.oracle.llm.llm_oracle import LLMOracleResult, synthesize_llm
from repo2rlenv.pipelines.test_synthesis.oracle.human import find_human_oracle
from repo2rlenv.pipelines.test_synthesis.oracle.merge import merge_tests
from repo2rlenv.pipelines.test_synthesis.oracle.sandbox_runner import VariantRunner
from repo2rlenv.pipelines.test_synthesis.trials import Trials

# Where an oracle's inputs came from, strongest first (`InputSource`, and "model" for an LLM's).
INPUT_RANK = ("recorded", "perturbed", "generated", "guessed", "model")


def weakest_inputs(sources: list[str]) -> str:
    return max(sources, key=lambda s: INPUT_RANK.index(s) if s in INPUT_RANK else len(INPUT_RANK))


class OracleSource(StrEnum):
    """Which oracle wrote the accepted file (`oracle_kind` in task.toml)."""

    DIFFERENTIAL = "differential"
    LLM = "llm"
    HUMAN = "human"


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


@dataclass(frozen=True, slots=True)
class OracleFound:
    """The accepted reference tests and how they were found (task.toml's oracle_* fields)."""

    source: str
    kind: str  # an `OracleSource` value, or the `oracle` option's kind when the result names none
    attempts: int  # model replies spent (at least 1, as task.toml has always counted)
    model: str | None  # the model that wrote it, if one did
    inputs: str  # where its inputs came from: an `InputSource` value, or "model"
    origin: str = "differential"  # `oracle_origin`: human, differential or model
    detail: str = ""  # for a human oracle, the cases kept and their file
    behaviours: int | None = None  # a differential oracle's distinct behaviours asserted (its quality)


def oracle_kind(options: TestSynthesisOptions, llm_client: ChatClient | None) -> str:
    """`auto` means differential without a model and hybrid with one (issue 5)."""
    if options.oracle == "auto":
        return "hybrid" if llm_client is not None else "differential"
    return options.oracle


def search_limits(options: TestSynthesisOptions) -> Limits:
    """The differential search's time limits the options ask for."""
    return Limits(search_sec=options.oracle_search_sec)


def probe_timeout(options: TestSynthesisOptions) -> float:
    """Wall clock of one probe run in the sandbox. Within the search's share too: a call that ignores the
    probe's own call timeout (C code holding the interpreter, a mutant looping where signals are caught) ran
    into the runner's 240 s on lark and held the candidate for all of it."""
    whole = options.mutant_timeout_sec * 4
    return min(whole, options.oracle_search_sec) if options.oracle_search_sec else whole


def find_human(cand: Candidate, *, trials: Trials, test_path: str,
               options: TestSynthesisOptions) -> OracleFound | Drop | None:
    """The change's own fail-to-pass cases as the oracle, why they are none, or None for a candidate that
    carries no tests (a mutant, a source-only change)."""
    if not cand.tests_change:
        return None
    human = find_human_oracle(cand, trials=trials, test_path=test_path, options=options)
    if isinstance(human, Drop):
        return human
    # Developers' inputs from the repo's own tests: "recorded", as inputs harvested from the suite.
    return OracleFound(human.source, OracleSource.HUMAN.value, 1, None, "recorded", origin="human",
                       detail=f"{len(human.cases)} case(s) of {human.from_file}: " + ", ".join(human.cases))


def find_oracle(cand: Candidate, *, suite: SuiteRunner, a_dir: Path, test_path: str,
                options: TestSynthesisOptions, llm_client: ChatClient | None,
                harvest: list[str] | None = None) -> OracleFound | Drop:
    """The oracle for `cand`, written to pass on A and fail on B, or why there is none. `harvest`: the
    covering tests the differential oracle records calls from (default: all; `test_share.fastest_tests`
    cuts them on a slow suite)."""
    found = _search(cand, suite=suite, a_dir=a_dir, test_path=test_path, options=options, llm_client=llm_client,
                    harvest=cand.covering_tests if harvest is None else harvest)
    return found if isinstance(found, Drop) else dataclasses.replace(found, origin=origin_of_kind(found.kind))


def _search(cand: Candidate, *, suite: SuiteRunner, a_dir: Path, test_path: str,
            options: TestSynthesisOptions, llm_client: ChatClient | None,
            harvest: list[str]) -> OracleFound | Drop:
    """The differential and model oracles, as the `oracle` option asks."""
    runner = VariantRunner(suite, cand.files_b, timeout=probe_timeout(options))
    context = context_for_candidate(cand, a_dir, test_path, options)
    kind = oracle_kind(options, llm_client)
    if kind == "llm":
        llm = synthesize_llm(client=llm_client, runner=runner, context=context, max_attempts=options.max_attempts)
        if not llm.found or not llm.test_source:
            return Drop(llm.reason or SkipReason.no_oracle, llm.detail or "")
        return OracleFound(llm.test_source, "llm", len(llm.attempts), llm.model, "model")
    both = synthesize_hybrid(client=llm_client if kind == "hybrid" else None, runner=runner, context=context,
                             covering_tests=harvest, max_attempts=options.max_attempts, seed=options.seed,
                             limits=search_limits(options))
    if not both.found or not both.test_source:
        return Drop(both.reason or SkipReason.no_oracle, both.detail or "")
    from_model = both.kind is OracleSource.LLM
    inputs = "model" if from_model or both.differential.inputs is None else both.differential.inputs.value
    return OracleFound(both.test_source, both.kind.value if both.kind else kind, max(1, both.attempts),
                       both.synthesis_llm, inputs,
                       behaviours=None if from_model else (both.differential.behaviours or None))


def extend_oracle(oracle: str, other: Candidate, *, trials: Trials, a_dir: Path, test_path: str,
                  options: TestSynthesisOptions, suffix: str, harvest: list[str] | None = None) -> tuple[str, str] | None:
    """The oracle plus the tests a model-free search finds for `other` (`merge`), when the whole still
    passes on A, catches `other`, and fits the submission size limit, with where its inputs came from;
    else None. `harvest`: as `find_oracle`'s."""
    runner = VariantRunner(trials.suite, other.files_b, timeout=probe_timeout(options))
    context = context_for_candidate(other, a_dir, test_path, options)
    search = synthesize_hybrid(client=None, runner=runner, context=context,
                               covering_tests=other.covering_tests if harvest is None else harvest,
                               max_attempts=1, seed=options.seed, limits=search_limits(options))
    if not search.found or not search.test_source:
        return None
    merged = merge_tests(oracle, search.test_source, suffix)
    if merged is None or sum(1 for line in merged.splitlines() if line.strip()) > options.max_test_loc:
        return None
    if not trials.passes({test_path: merged}, [test_path]) or not trials.catches(merged, other.files_b, test_path):
        return None
    inputs = search.differential.inputs
    return merged, inputs.value if inputs is not None else "model"

"""Why a run emitted fewer tasks than asked, and what to try: the funnel's dominant drop reason, through one
table reason → advice. Printed at the end of `generate` and kept in summary.json under "advice".
"""

from __future__ import annotations

from collections import Counter

from pydantic import BaseModel, ConfigDict

from repo2rlenv.pipelines.test_synthesis.candidates import SkipReason

_MORE = "more candidates: --pipeline-opt limit=N tries further; --pipeline-opt max_per_function=N allows more per function"
# Filled in by `advise` with the strategies other than the run's own: advice never suggests the strategy
# in use (issue 33: a commit_pair run on click was told to try strategy=commit_pair).
_STRATEGY = "another strategy: {strategies}"
STRATEGIES: dict[str, str] = {
    "commit_pair": "--pipeline-opt strategy=commit_pair (the repo's own bug fixes)",
    "hybrid": "--pipeline-opt strategy=hybrid (the repo's own changes first, then mutants)",
    "mutation": "--pipeline-opt strategy=mutation (mutants of the covered functions)",
}
_LLM = ("an LLM oracle: --llm provider/model (oracle=auto then asks the model where the differential search "
        "finds no input)")

# Reason → (what it means, what to try). Keys are the strings the funnel counts (SkipReason values and the
# miner's "function: …" reasons); a reason missing here falls back to `_FALLBACK`.
ADVICE: dict[str, tuple[str, str]] = {
    SkipReason.killed.value: ("the suite kills every mutant it covers: the existing tests already notice these changes",
                              f"{_STRATEGY}; or {_MORE}"),
    SkipReason.suite_notices_b.value: ("the repo's whole suite already notices these changes (only the "
                                       "covering tests missed them)", f"{_MORE}; or {_STRATEGY}"),
    SkipReason.no_oracle.value: ("no input was found that tells A from B for the surviving mutants",
                                 f"{_LLM}; or {_MORE}"),
    SkipReason.oracle_not_perfect.value: ("the oracles found did not score 1.0 in the sandbox", f"{_LLM}; or {_MORE}"),
    SkipReason.aprime_broken.value: ("no behaviour-preserving rewrite of the function passes the suite", _MORE),
    SkipReason.validation_failed.value: ("tasks were built but failed validation (oracle 1.0, empty 0.0)",
                                         "read validation/ and candidates.jsonl; `repo2rlenv validate DIR` reruns them"),
    SkipReason.breaks_import.value: ("mutants break the package's import", _MORE),
    SkipReason.does_not_compile.value: ("mutants do not compile", _MORE),
    SkipReason.import_time.value: ("the mutated functions run only when the package is imported (no test calls "
                                   "them)", _STRATEGY),
    SkipReason.timeout_on_b.value: ("the covering tests time out on B",
                                    "--pipeline-opt mutant_timeout_sec=N allows slower tests"),
    SkipReason.duplicate.value: ("candidates duplicate earlier ones", _MORE),
    SkipReason.native_refused.value: (
        "the target's import needs a native module the graded runs refuse (see candidates.jsonl)", _MORE),
    SkipReason.run_crashed.value: (
        "the graded run on A crashed (validation says why: a plugin or native module the runs refuse)", _MORE),
    SkipReason.after_crash.value: ("an earlier task of the same function or module crashed in its graded run", _MORE),
    # The differential oracle's own reasons (oracle.differential.NoOracle), counted when it gives up.
    "probe failed": ("the differential oracle's probe of the function failed (see candidates.jsonl)", f"{_LLM}; or {_MORE}"),
    "generated tests did not separate the versions": ("the generated tests did not tell A from B", f"{_LLM}; or {_MORE}"),
    "only wrong-type errors of made-up inputs tell the versions apart": (
        "only wrong-type errors of inputs the search made up told A from B (no behaviour to assert)",
        f"{_LLM}; or {_MORE}"),
    "oracle below the quality floor (min_oracle_behaviours)": (
        "the oracles found asserted fewer distinct behaviours than min_oracle_behaviours",
        f"--pipeline-opt min_oracle_behaviours=N with a lower N; or {_LLM}"),
    "oracle exceeds the line budget": ("the oracles found were longer than the line budget",
                                       f"--pipeline-opt max_test_loc=N; or {_LLM}"),
    SkipReason.no_change.value: ("the changes mined leave the code's text unchanged", _STRATEGY),
    "function: module not imported by the suite": (
        "no function is covered by the suite: coverage saw none of the package's modules imported "
        "(the repo's own coverage settings, e.g. --cov in addopts, can take over the recording)",
        "run `repo2rlenv doctor --repo …` to see the pytest command and coverage; or " + _STRATEGY),
    "function: no mutation site": ("the covered functions offer no mutation site", _STRATEGY),
    "function: not_package_source": ("no module was recognised as the package's source (a single top-level "
                                     "module, or code outside the import roots)",
                                     "run `repo2rlenv doctor --repo …` to see the import roots; or " + _STRATEGY),
    "function: test_code": ("the only functions found are test code", "run `repo2rlenv doctor --repo …`"),
    "over its time share (candidate_budget_sec)": (
        "candidates' synthesis (the whole suite on A and B, siblings, validation) took longer than their share",
        "--pipeline-opt candidate_budget_sec=N allows more (0: no share)"),
    "no candidates": ("mining found no candidate", "run `repo2rlenv doctor --repo …`; or " + _STRATEGY),
}
_FALLBACK = ("candidates were dropped", f"{_MORE}; or {_STRATEGY}")
_FUNCTION_FALLBACK = ("no function qualified for mutation", "run `repo2rlenv doctor --repo …`; or " + _STRATEGY)
# Reasons the gates give (a candidate that never survived them); the rest lose survivors.
_GATE_REASONS = {r.value for r in (SkipReason.killed, SkipReason.breaks_import, SkipReason.import_time,
                                   SkipReason.does_not_compile, SkipReason.timeout_on_b, SkipReason.duplicate,
                                   SkipReason.no_change)}
# Funnel entries that are not a drop: a candidate passed over because enough tasks came from its function.
_NOT_DROPS = {SkipReason.over_limit.value}


class Advice(BaseModel):
    """The dominant reason a run fell short, and what to try."""

    model_config = ConfigDict(extra="forbid")

    emitted: int
    wanted: int
    reason: str
    count: int
    meaning: str
    try_: str
    line: str


def _other_strategies(strategy: str | None) -> str:
    others = [text for name, text in STRATEGIES.items() if name != strategy]
    return " or ".join(others)


# A run the time budget stopped short: its time, not a drop reason, is why (issue 34: say in one line why not).
TIME_SPENT = "time budget spent"
_TIME_TRY = ("rerun the same command (it continues where this run stopped); or --pipeline-opt time_budget_min=N "
             "with a larger N (0: no budget)")


def advise(skip_reasons: Counter[str] | dict[str, int], *, emitted: int, wanted: int,
           candidates: int | None = None, strategy: str | None = None, stopped: str | None = None,
           time_line: str | None = None) -> Advice | None:
    """None when the run emitted what was asked; else the funnel's dominant drop reason and what to try
    (`strategy`, the run's own, is never suggested). A run `stopped` by its time budget says where its
    time went (`time_line`, budget.TimeReport.line) instead."""
    if emitted >= wanted:
        return None
    if stopped and stopped.startswith("time budget"):
        meaning = f"the time budget ran out ({time_line})" if time_line else "the time budget ran out"
        return Advice(emitted=emitted, wanted=wanted, reason=TIME_SPENT, count=0, meaning=meaning, try_=_TIME_TRY,
                      line=f"emitted {emitted} of {wanted}: {meaning}. To try: {_TIME_TRY}")
    drops = {k: v for k, v in dict(skip_reasons).items() if v and k not in _NOT_DROPS}
    candidate_drops = {k: v for k, v in drops.items() if not k.startswith("function: ")}
    if candidates == 0 or not candidate_drops:
        # Nothing reached the gates: the reason is why the miner kept no function.
        # Test code, vendored or tiny functions are left out in every repo; a reason that says why the
        # package's own functions were lost comes first, however few.
        function_drops = sorted(((k, v) for k, v in drops.items() if k.startswith("function: ")),
                                key=lambda kv: (kv[0] not in ADVICE or kv[0] == "function: test_code", -kv[1]))
        reason, count = function_drops[0] if function_drops else ("no candidates", 0)
    else:
        # When enough candidates survived the gates to meet the goal, the gates were not the bottleneck:
        # what lost the survivors afterwards is (mdurl: 237 killed, 148 survivors with no oracle).
        after = {k: v for k, v in candidate_drops.items() if k not in _GATE_REASONS}
        best_after = max(after.items(), key=lambda kv: kv[1]) if after else None
        reason, count = (best_after if best_after and best_after[1] >= wanted
                         else max(candidate_drops.items(), key=lambda kv: kv[1]))
    meaning, try_ = ADVICE.get(reason, _FUNCTION_FALLBACK if reason.startswith("function: ") else _FALLBACK)
    try_ = try_.replace("{strategies}", _other_strategies(strategy))
    line = (f"emitted {emitted} of {wanted}: {meaning} ({reason}: {count}). To try: {try_}"
            if count else f"emitted {emitted} of {wanted}: {meaning}. To try: {try_}")
    return Advice(emitted=emitted, wanted=wanted, reason=reason, count=count, meaning=meaning, try_=try_, line=line)

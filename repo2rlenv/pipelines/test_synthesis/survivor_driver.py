"""The driver for a candidate that survived the gates: oracle (oracle/) → the whole suite on B (gate/late)
→ siblings (gate/siblings) → the oracle's coverage and twin kinds (emit/assemble) → task tree and
validation (emit/).

Each stage returns what it decided; a `Drop` ends the candidate here, recorded by this driver alone. Only
a task whose oracle scores exactly 1.0 under its own verifier (and whose empty submission scores 0.0) is
kept in the dataset.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from repo2rlenv.baseline.runner import BaselineReport, SuiteRunner
from repo2rlenv.llm.base import ChatClient
from repo2rlenv.pipelines.test_synthesis.budget import OVER_SHARE, CandidateTimer, Clock, Deferred, StageCosts
from repo2rlenv.discovery.native_needs import TargetNeeds, session_target_needs
from repo2rlenv.pipelines.test_synthesis.candidates import Candidate, Drop, GateResult, SkipReason
from repo2rlenv.pipelines.test_synthesis.emit import assemble
from repo2rlenv.pipelines.test_synthesis.emit.assemble import CRASH_BEFORE_CASES
from repo2rlenv.pipelines.test_synthesis.emit.emit import TaskSpec, task_hash, task_id_for
from repo2rlenv.pipelines.test_synthesis.emit.validation import TaskValidator
from repo2rlenv.pipelines.test_synthesis.gate.late import suite_on_b
from repo2rlenv.pipelines.test_synthesis.gate.siblings import CandidateGates, SiblingSearch, find_siblings
from repo2rlenv.pipelines.test_synthesis.options import TestSynthesisOptions
from repo2rlenv.pipelines.test_synthesis.oracle.calls_only import calls_only
from repo2rlenv.pipelines.test_synthesis.test_share import fastest_tests
from repo2rlenv.pipelines.test_synthesis.oracle.search import (
    OracleFound,
    extend_oracle,
    find_human,
    find_oracle,
    weakest_inputs,
)
from repo2rlenv.pipelines.test_synthesis.trials import Trials
from repo2rlenv.sandbox.install import InstallPlan


@dataclass
class SynthesisContext:
    """What every candidate's synthesis shares within one run."""

    suite: SuiteRunner
    baseline: BaselineReport
    options: TestSynthesisOptions
    a_dir: Path
    tasks_root: Path
    repo: str
    repo_slug: str
    ref: str | None
    pipeline_version: str
    base_image: str
    install: InstallPlan
    validator: TaskValidator | None
    llm_client: ChatClient | None = None  # when --llm is given
    gates: CandidateGates | None = None  # the run's gate runner, for sibling mutants
    siblings_of: Callable[[Candidate], list[Candidate]] | None = None  # other candidates of the same function
    # Files the environment's build wrote into the workspace (sandbox/generated.py): part of every task's repo.
    generated: dict[str, str] = field(default_factory=dict)
    # pytest plugins installed in the environment, loaded with -p in graded runs (pytest_setup.graded_plugins).
    pytest_plugins: list[str] = field(default_factory=list)
    native_exposed: list[str] = field(default_factory=list)  # raw-memory modules the project's import loads
    # The whole suite's baseline when `baseline` covers part of it (a commit judged on its covering tests,
    # gate/scope.py): run on demand, once an oracle exists; a Drop when the whole suite fails on A there.
    whole_suite: Callable[[], BaselineReport | Drop] | None = None
    # The run's deadline (`time_budget_min`); none: no budget. Shared by the ref's and every commit's context.
    clock: Clock = field(default_factory=Clock)
    costs: StageCosts | None = None  # expected stage costs, learned as the run goes (budget.py)
    # What each target module needs at import beyond what graded runs map (native_needs.session_target_needs),
    # probed once per module in this context's session; a commit's context has its own.
    target_needs: dict[str, TargetNeeds] = field(default_factory=dict)
    # Functions and modules whose task's graded run crashed on A: shared by the ref's and every commit's context.
    crashes: "CrashMemory" = field(default_factory=lambda: CrashMemory())


@dataclass
class CrashMemory:
    """Where a task's graded run crashed on A (validation): a crash is the environment's (a plugin or a native
    module that cannot load, a kernel refusal), so it repeats for the next candidate of the same function, and of
    the same module when nothing of the run had started yet. Those are skipped instead of re-synthesized."""

    functions: dict[str, str] = field(default_factory=dict)  # function key → the crash's one line
    modules: dict[str, str] = field(default_factory=dict)  # module → the crash's one line

    def record(self, cand: Candidate, detail: str) -> None:
        self.functions.setdefault(cand.function.key, detail)
        if detail.startswith(CRASH_BEFORE_CASES):
            self.modules.setdefault(cand.function.module, detail)

    def skip(self, cand: Candidate) -> Drop | None:
        if cand.function.key in self.functions:
            return Drop(SkipReason.after_crash, f"this function's task crashed: {self.functions[cand.function.key]}"[:500])
        if cand.function.module in self.modules:
            return Drop(SkipReason.after_crash, f"this module's task crashed: {self.modules[cand.function.module]}"[:500])
        return None


# The drop of an oracle under the `min_oracle_behaviours` floor (counted as it is in the summary).
LOW_QUALITY = "oracle below the quality floor (min_oracle_behaviours)"

# The stages that run a share of a candidate's covering tests: the option giving the share, and how a cut
# is named (its gate, and the stage in the gate's detail).
_SHARES = {
    "harvest": ("harvest_budget_sec", "harvest cut to its time share", "the harvest"),
    "twin check": ("twin_check_budget_sec", "twin check cut to its time share", "the twin check"),
}


class _SiblingOracle:
    """`gate.siblings.SiblingOracle` for one task: the oracle stage's answers, run through `Trials`."""

    def __init__(self, trials: Trials, ctx: SynthesisContext, test_path: str):
        self.trials, self.ctx, self.test_path = trials, ctx, test_path

    def catches(self, oracle: str, other: Candidate) -> bool:
        return self.trials.catches(oracle, other.files_b, self.test_path)

    def crash_only(self, oracle: str, other: Candidate) -> bool:
        bare = calls_only(oracle)
        return bare is not None and self.catches(bare, other)

    def extend(self, oracle: str, other: Candidate, suffix: str) -> tuple[str, str] | None:
        return extend_oracle(oracle, other, trials=self.trials, a_dir=self.ctx.a_dir, test_path=self.test_path,
                             options=self.ctx.options, suffix=suffix,
                             harvest=covering_share(self.ctx, self.trials, other, "harvest", record=False))


def covering_share(ctx: SynthesisContext, trials: Trials, cand: Candidate, stage: str, *, record: bool = True) -> list[str]:
    """The covering tests `stage` (a `_SHARES` key) runs for `cand`: the fastest up to the stage's share,
    timed by the baseline and every run so far (a test can be far slower in a small run than in the whole
    suite); a cut is recorded on `cand` once when `record` (a sibling's harvest is not its own task's)."""
    option, gate, label = _SHARES[stage]
    budget = getattr(ctx.options, option)
    share = fastest_tests(cand.covering_tests, trials.durations(ctx.baseline.durations), budget)
    if record and share.cut and not any(g.gate == gate for g in cand.gates):
        cand.apply(GateResult(gate=gate, passed=True, detail=share.detail(label, option, budget)))
    return share.tests


class Synthesizer:
    """Turns kept candidates into tasks, one at a time."""

    def __init__(self, ctx: SynthesisContext):
        self.ctx = ctx
        if ctx.costs is None:
            ctx.costs = StageCosts(ctx.baseline.duration_sec)
        self.trials = Trials(ctx.suite, default_timeout=ctx.options.mutant_timeout_sec * 2,
                             reward_mode=ctx.options.reward_mode)
        self.test_dir = assemble.tests_dir(ctx.baseline)

    def _siblings(self, cand: Candidate, test_path: str, oracle: str, timer: CandidateTimer) -> SiblingSearch:
        ctx = self.ctx
        if ctx.gates is None or ctx.siblings_of is None:
            return SiblingSearch(oracle=oracle)
        # What must follow the search (twins, then publishing) keeps its time: the search stops before it.
        reserve = ctx.costs.expect("twins") + ctx.costs.expect("publish") if ctx.costs else 0.0
        # ... and its own share: a task ships with the siblings it has (fewer makes the reward coarser, not
        # wrong), so a slow library's search must not eat the time of the next candidates.
        until = time.monotonic() + ctx.options.siblings_budget_sec if ctx.options.siblings_budget_sec else math.inf

        def go_on() -> bool:
            return not timer.over_share() and timer.clock.affords(reserve) and time.monotonic() < until

        search = find_siblings(cand, oracle, ctx.siblings_of(cand), gates=ctx.gates,
                               probe=_SiblingOracle(self.trials, ctx, test_path), options=ctx.options, go_on=go_on)
        if search.cut:
            cand.apply(GateResult(gate="siblings cut by the time budget", passed=True,
                                  detail=f"{len(search.siblings)} found before the search stopped"))
        return search

    def synthesize(self, cand: Candidate) -> str | None:
        """Make and publish the task for `cand`; returns its id, or None with `cand` dropped or deferred."""
        assert self.ctx.costs is not None
        timer = CandidateTimer(self.ctx.clock, self.ctx.costs, self.ctx.options.candidate_budget_sec)
        try:
            decided = self._task(cand, timer)
        finally:
            cand.seconds.update(timer.seconds)
        if isinstance(decided, Deferred) and decided.stage == OVER_SHARE:
            decided = Drop(OVER_SHARE, decided.detail)  # a rerun would spend the same again: decided
        if isinstance(decided, Deferred):
            cand.status = "deferred"
            cand.gates.append(GateResult(gate="deferred", passed=False, detail=decided.detail[:500]))
            return None
        if isinstance(decided, Drop):
            cand.apply(decided)
            return None
        cand.status, cand.task_id = "emitted", decided
        return decided

    def _task(self, cand: Candidate, timer: CandidateTimer) -> str | Drop | Deferred:
        """The stages in order; the first drop ends the candidate, and one the time left cannot afford
        defers it. Passed late gates join its record."""
        ctx, opts = self.ctx, self.ctx.options
        if (crashed := ctx.crashes.skip(cand)) is not None:
            return crashed
        needs = self._target_needs(cand)
        if needs.refused:
            return Drop(SkipReason.native_refused,
                        f"importing {cand.function.module} needs {needs.why()}: refused by the native allowlist "
                        "of graded runs (docs/integrity.md), so the module does not import there"[:500])
        if needs.exposed:
            cand.apply(GateResult(gate="target exposes raw memory", passed=True,
                                  detail=f"importing {cand.function.module} needs or loads {', '.join(needs.exposed)}: "
                                         "reachable in its graded runs (native_exposed, docs/integrity.md)"))
        test_path = assemble.submission_path(self.test_dir, task_hash(ctx.repo_slug, ctx.ref, cand))
        if (late := timer.before("oracle")) is not None:
            return late
        with timer.stage("oracle"):
            found = self._oracle(cand, test_path)
        if isinstance(found, Drop):
            return found
        # After the oracle (most survivors never get one), before the siblings and twins (many runs each).
        baseline = ctx.baseline
        if ctx.whole_suite is not None:
            if (late := timer.before("whole suite on A")) is not None:
                return late
            with timer.stage("whole suite on A"):
                whole = ctx.whole_suite()
            if isinstance(whole, Drop):
                return whole
            cand.apply(GateResult(gate="whole suite passes on A", passed=True,
                                  detail=f"{len(whole.stable_passing)} stable tests"))
            baseline = whole
        if (late := timer.before("whole suite on B")) is not None:
            return late
        with timer.stage("whole suite on B"):
            gate = suite_on_b(cand, self.trials, baseline, opts.suite_timeout_sec)
        cand.apply(gate)
        if isinstance(gate, Drop):
            return gate
        # Siblings are optional: past the deadline the search stops with what it found (fewer siblings).
        with timer.stage("siblings"):
            search = self._siblings(cand, test_path, found.source, timer)
        if (late := timer.before("twins")) is not None:
            return late
        with timer.stage("twins"):
            lines = assemble.oracle_lines(cand, self.trials, test_path, search.oracle)
            if isinstance(lines, Drop):
                return lines
            kinds = assemble.twin_kinds(cand, search.siblings, ctx.a_dir, self.trials, test_path, search.oracle,
                                        covering=lambda: covering_share(ctx, self.trials, cand, "twin check"))
        if isinstance(kinds, Drop):
            return kinds
        spec = self._spec(cand, test_path, found, search, lines, kinds)
        if (late := timer.before("publish")) is not None:
            return late
        with timer.stage("publish"):
            published = assemble.publish(spec, opts, ctx.a_dir, ctx.tasks_root, ctx.validator)
        if isinstance(published, Drop) and published.reason == SkipReason.run_crashed:
            ctx.crashes.record(cand, published.detail)
        return published

    def _target_needs(self, cand: Candidate) -> TargetNeeds:
        """What the candidate's module needs at import beyond what graded runs map (once per module)."""
        ctx, module = self.ctx, cand.function.module
        if module not in ctx.target_needs:
            session = getattr(ctx.suite, "session", None)
            ctx.target_needs[module] = (TargetNeeds() if session is None or not module else
                                        session_target_needs(session, module, ctx.install.import_roots,
                                                             ctx.native_exposed))
        return ctx.target_needs[module]

    def _oracle(self, cand: Candidate, test_path: str) -> OracleFound | Drop:
        """The change's own tests first (recorded either way: why they were used, or why not), then the
        search every candidate gets."""
        ctx = self.ctx
        human = find_human(cand, trials=self.trials, test_path=test_path, options=ctx.options)
        if human is not None:
            used = not isinstance(human, Drop)
            why = human.detail if used else f"{human.reason}" + (f" ({human.detail})" if human.detail else "")
            cand.apply(GateResult(gate="human oracle", passed=used, detail=why[:500]))
            if used:
                return human
        harvest = covering_share(ctx, self.trials, cand, "harvest")
        found = find_oracle(cand, suite=ctx.suite, a_dir=ctx.a_dir, test_path=test_path, options=ctx.options,
                            llm_client=ctx.llm_client, harvest=harvest)
        if isinstance(found, Drop) or found.behaviours is None:
            return found
        floor = ctx.options.min_oracle_behaviours
        quality = f"{found.behaviours} distinct behaviour(s) asserted, inputs {found.inputs}"
        if found.behaviours < floor:
            return Drop(LOW_QUALITY, f"{quality}; min_oracle_behaviours={floor}")
        cand.apply(GateResult(gate="oracle quality", passed=True, detail=quality))
        return found

    def _spec(self, cand: Candidate, test_path: str, found: OracleFound, search: SiblingSearch,
              lines: assemble.OracleLines, kinds: tuple[str, ...]) -> TaskSpec:
        ctx = self.ctx
        config = assemble.verifier_config(cand, lines, test_path=test_path, siblings=len(search.siblings),
                                          kinds=kinds, options=ctx.options, install=ctx.install,
                                          pytest_plugins=ctx.pytest_plugins,
                                          native_exposed=sorted({*ctx.native_exposed,
                                                                 *self._target_needs(cand).exposed}))
        bare = calls_only(search.oracle)
        return TaskSpec(
            task_id=task_id_for(ctx.repo_slug, ctx.ref, cand), test_path=test_path, repo=ctx.repo,
            repo_slug=ctx.repo_slug, ref=ctx.ref, pipeline_version=ctx.pipeline_version, candidate=cand,
            oracle_source=search.oracle, oracle_kind=found.kind, oracle_origin=found.origin,
            oracle_attempts=found.attempts,
            synthesis_llm=found.model, oracle_inputs=weakest_inputs([found.inputs, *search.inputs]),
            b_crashes=bare is not None and self.trials.catches(bare, cand.files_b, test_path),
            twin_kinds=list(kinds), verifier_config=config.model_dump(mode="json"),
            base_image=ctx.install.base_image, install=ctx.install,
            existing_test_files=assemble.existing_test_files(cand),
            sibling_diffs=[sib.diff for sib in search.siblings], generated_files=ctx.generated,
        )

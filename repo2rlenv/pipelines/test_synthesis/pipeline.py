"""The test_synthesis pipeline driver: snapshot → sandbox → baseline → mine → gate → oracle → emit.

Candidates are processed lazily in the miner's order until `limit` distinct tasks exist, so the limit
bounds tasks, not candidates tried. Duplicates (dataset/dedup.py) are merged as each task is emitted, so
a merge frees its place and the run goes on mining to refill it (issue 34, item 6). Every candidate's
fate lands in `candidates.jsonl`.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ClassVar, Protocol, Sequence

from pydantic import BaseModel

from repo2rlenv import atomic
from repo2rlenv.baseline.runner import BaselineReport
from repo2rlenv.errors import ConfigError, SourceError
from repo2rlenv.journal import Journal, journal_key
from repo2rlenv.dataset.dedup import load_report, merge_duplicates
from repo2rlenv.dataset.manifest import write_manifest
from repo2rlenv.pipelines.base import PipelineResult, RunContext
from repo2rlenv.pipelines.test_synthesis.advice import advise
from repo2rlenv.pipelines.test_synthesis.budget import DEFERRED, Clock, SlowItem, TimeReport, slowest
from repo2rlenv.pipelines.test_synthesis.candidates import Candidate, Drop, SkipReason
from repo2rlenv.pipelines.test_synthesis.commit_driver import judge_at_commits, split_pairs, task_ref
from repo2rlenv.pipelines.test_synthesis.mine.commit_pair import SEVERAL_GATE
from repo2rlenv.pysource.functions import FunctionRecord
from repo2rlenv.pipelines.test_synthesis.gate.batch import gate_runner_for
from repo2rlenv.pipelines.test_synthesis.gate.gates import baseline_coverage
from repo2rlenv.discovery.native_needs import graded_plugins_under_barrier, session_native_needs
from repo2rlenv.pipelines.test_synthesis.gate.siblings import CandidateGates
from repo2rlenv.sandbox.generated import generated_files
from repo2rlenv.pipelines.test_synthesis.emit.emit import task_id_for
from repo2rlenv.pipelines.test_synthesis.options import TestSynthesisOptions
from repo2rlenv.pipelines.test_synthesis.ref_setup import open_ref, ref_baseline
from repo2rlenv.pipelines.test_synthesis.survivor_driver import SynthesisContext, Synthesizer
from repo2rlenv.pipelines.test_synthesis import spread
from repo2rlenv.pipelines.test_synthesis.oracle.differential.differential import TYPE_CONSISTENT
from repo2rlenv.pipelines.test_synthesis.emit.validation import task_validator
from repo2rlenv.dataset.taskdir import DatasetPaths

PIPELINE_VERSION = "0.1.0"
# Candidates gated per worker batch: about four per task still wanted (most mutants are killed), within
# bounds that keep the worker's warm-up amortised and the work past the limit small.
_MIN_BATCH, _MAX_BATCH, _BATCH_PER_TASK = 8, 64, 4


def _meta_counts(dataset: DatasetPaths, task_ids: list[str], field: str) -> dict[str, int]:
    """How many of the tasks have each value of task.toml's test_synthesis `field` (oracle_inputs, ...)."""
    counts: Counter[str] = Counter()
    for task_id in task_ids:
        task = dataset.task(task_id)
        if task.task_toml.is_file():
            counts[getattr(task.config().metadata.repo2env.test_synthesis, field) or "unknown"] += 1
    return dict(counts)


def _emitted_function(ctx: RunContext, task_id: str) -> str | None:
    """A published task's touched function (path::qualname, as `FunctionRecord.key` spells it)."""
    task = DatasetPaths(ctx.out_dir).task(task_id)
    if not task.task_toml.is_file():
        return None
    return task.config().metadata.repo2env.test_synthesis.touched_function


MERGED = "merged into duplicates"
REFILLED = "refilled after merges"


def distinct(result: PipelineResult) -> int:
    """Tasks that count toward `limit`: those emitted, less those merged into a duplicate."""
    return len(result.emitted) - result.stages[MERGED]


def _siblings_index(candidates: list[Candidate]):
    """`siblings_of(cand)`: the other candidates touching the same function, in try order."""
    by_function: dict[str, list[Candidate]] = {}
    for cand in candidates:
        by_function.setdefault(cand.function.key, []).append(cand)

    def siblings_of(cand: Candidate) -> list[Candidate]:
        return [c for c in by_function.get(cand.function.key, []) if c.candidate_id != cand.candidate_id and c.strategy == "mutation"]

    return siblings_of


class _Synth(Protocol):
    def synthesize(self, cand: Candidate) -> str | None: ...


@dataclass(slots=True)
class _Decisions:
    """What earlier runs decided (the journal of this run's key, the tasks already published) and the
    tasks emitted per function in the current loop."""

    journal: Journal[Candidate]
    decided: dict[str, Candidate]
    existing: set[str]
    merged: set[str] = field(default_factory=set)
    per_function: Counter[str] = field(default_factory=Counter)

    @classmethod
    def load(cls, ctx: RunContext, options: TestSynthesisOptions, a_digest: str) -> "_Decisions":
        dataset = DatasetPaths(ctx.out_dir)
        # Options that cannot change a decision stay out of the key: a rerun with a larger limit, without
        # validation or with more gate workers (say, on a bigger machine) continues the same journal.
        state_key = journal_key(ctx.source.slug, ctx.commit, a_digest,
                                options.model_dump(exclude={"limit", "validate_tasks", "gate_workers"}))
        journal: Journal[Candidate] = Journal(dataset.root / ".r2e-state" / f"{state_key}.jsonl", Candidate,
                                              "candidate_id")
        # A task merged into a duplicate was emitted and decided: a rerun counts it, and does not remake it.
        merged = set(load_report(dataset).by_task)
        return cls(journal=journal, decided=journal.load(), existing=set(dataset.task_ids()) | merged, merged=merged)

    def fresh_share(self) -> "_Decisions":
        """The same record of earlier runs with a new per-function count (the ref's loop after the
        commits' loop counts its own share, as it always has)."""
        return _Decisions(journal=self.journal, decided=self.decided, existing=self.existing, merged=self.merged)


class TestSynthesisPipeline:
    """Tasks where the agent writes tests that pass on A and fail on a hidden B."""

    __test__ = False
    name: ClassVar[str] = "test_synthesis"
    version: ClassVar[str] = PIPELINE_VERSION
    options_model: ClassVar[type[BaseModel]] = TestSynthesisOptions

    def run(self, ctx: RunContext, options: BaseModel) -> PipelineResult:
        assert isinstance(options, TestSynthesisOptions)
        if options.strategy == "commit_pair" and not ctx.source.has_git:
            # Checked before any sandbox work: a plain directory has no history to mine.
            raise SourceError(f"strategy 'commit_pair' needs git history, but {ctx.source.spec} has no .git "
                              "(use --pipeline-opt strategy=mutation)")
        rep = ctx.reporter
        result = PipelineResult()
        # From the run's start: the environment and the baseline spend the budget too.
        self._clock = Clock(options.time_budget_min)
        self._started = time.monotonic()
        self._cannot_afford: str | None = None  # why a candidate was deferred: no later one can afford it either
        self._baseline: BaselineReport | None = None
        self._decided: list[Candidate] = []  # every candidate decided so far, for where the time went
        try:
            return self._run(ctx, options, result)
        except KeyboardInterrupt:
            # Interrupted (Ctrl-C, or SIGTERM through the CLI): the journal already holds every decision, so
            # a rerun continues; summary.json says how far this run got and where its time went.
            result.details["stopped"] = "interrupted; a rerun continues"
            report = self._time_report(ctx)
            result.details["time"] = report.model_dump()
            ctx.reporter.warn(f"interrupted after {report.line()}")
            ctx.out_dir.mkdir(parents=True, exist_ok=True)
            atomic.write_text(ctx.out_dir / "summary.json", json.dumps(result.to_json(), indent=2, sort_keys=True))
            raise

    def _run(self, ctx: RunContext, options: TestSynthesisOptions, result: PipelineResult) -> PipelineResult:
        rep = ctx.reporter
        ref = open_ref(ctx)
        a_dir, plan, session, runner = ref.a_dir, ref.plan, ref.session, ref.runner
        try:
            # Read before any test runs in the workspace: what is new there now, the build wrote.
            generated = generated_files(session, a_dir)
            exposed = session_native_needs(session, a_dir, plan.import_roots)
            result.details["native_exposed"] = exposed
            if exposed:
                rep.warn(f"the project imports {', '.join(exposed)} (raw memory access): a submission can reach it "
                         f"in graded runs too; the tasks record it (native_exposed, docs/integrity.md)")
            plugins, left_out = graded_plugins_under_barrier(session, plan.import_roots, exposed)
            if left_out:
                result.details["plugins_left_out"] = left_out
                rep.warn("pytest plugins left out of graded runs (their import needs a native module the runs "
                         "refuse): " + "; ".join(f"{name}: {why}" for name, why in sorted(left_out.items())))
            baseline = self._baseline = ref_baseline(ctx, options, ref)
            self._report_baseline(ctx, baseline)
            if ref.dropped:
                # Declared, not imported by the tests, and failed to install: the baseline judges the rest.
                result.details["dropped dependencies"] = [d.model_dump() for d in ref.dropped]
            result.details["baseline"] = {
                "tests": baseline.total, "stable_passing": len(baseline.stable_passing),
                "quarantined": baseline.quarantined, "skipped": len(baseline.skipped),
                "needs_network": len(baseline.needs_network), "collection_errors": baseline.collection_errors,
                "set_aside": baseline.set_aside,
            }
            rep.stage(f"mining candidates ({options.strategy})", "mining")
            candidates, skipped, functions = self._mine(ctx, options, a_dir, baseline, plan.import_roots, result)
            result.skip_reasons.update(skipped)
            result.stages["functions"] = len(functions)
            result.stages["candidates"] = len(candidates)
            if not (options.strategy == "commit_pair" and options.pair_base == "commit"):
                # The coverage table reads the ref's baseline; pairs judged at their commits have their own.
                self._report_functions(ctx, baseline, functions)
            client, ledger = self._llm(ctx, options)
            gates = gate_runner_for(options, runner, baseline)
            synth = Synthesizer(SynthesisContext(
                suite=runner, baseline=baseline, options=options, a_dir=a_dir,
                tasks_root=DatasetPaths(ctx.out_dir).tasks, repo=ctx.source.display_name,
                repo_slug=ctx.source.slug, ref=ctx.commit, pipeline_version=PIPELINE_VERSION,
                base_image=plan.base_image, install=plan, validator=task_validator(ctx, options),
                llm_client=client, gates=gates, siblings_of=_siblings_index(candidates), generated=generated,
                pytest_plugins=plugins, native_exposed=exposed, clock=self._clock))
            pairs, rest = split_pairs(options, candidates)
            decisions = _Decisions.load(ctx, options, ref.a_digest)
            processed: list[Candidate] = []
            with closing(judge_at_commits(ctx, options, synth.ctx, baseline, pairs, result)) as commits:
                for work in commits:
                    if distinct(result) >= options.limit or self._over_budget(ctx, result):
                        break
                    processed += self._process(ctx, options, work.gates, work.synth, work.pairs, result, decisions,
                                               earlier=processed)
            if (rest or not pairs) and not self._over_budget(ctx, result):
                processed += self._process(ctx, options, gates, synth, rest, result, decisions.fresh_share(),
                                           earlier=processed)
            result.details["spread"] = spread.summary(c for c in processed if c.status == "emitted")
            result.details["oracle_inputs"] = _meta_counts(DatasetPaths(ctx.out_dir), result.emitted, "oracle_inputs")
            # Who wrote each oracle (issue 33): the developers of a real change, the search, or a model.
            result.details["oracle_origin"] = _meta_counts(DatasetPaths(ctx.out_dir), result.emitted, "oracle_origin")
            # How many came from history and how many from mutants (hybrid, the default, mixes them).
            result.details["tasks_by_strategy"] = _meta_counts(DatasetPaths(ctx.out_dir), result.emitted, "strategy")
            if ledger is not None:
                result.details["llm"] = ledger.totals().model_dump(mode="json")
            # Made beyond the limit: only because merges freed places.
            if len(result.emitted) > options.limit:
                result.stages[REFILLED] = min(result.stages[MERGED], len(result.emitted) - options.limit)
            result.details["time"] = self._time_report(ctx).model_dump()
            short = advise(result.skip_reasons, emitted=distinct(result), wanted=options.limit,
                           candidates=result.stages.get("candidates"), strategy=options.strategy,
                           stopped=result.details.get("stopped"), time_line=TimeReport(**result.details["time"]).line())
            if short is not None:
                result.details["advice"] = short.model_dump()
            with rep.in_stage("emit"):
                self._write_outputs(ctx, baseline, processed, result)
        finally:
            session.close()
        self._report_summary(ctx, result)
        return result

    # --- stages ---------------------------------------------------------------------------------

    def _mine(self, ctx: RunContext, options: TestSynthesisOptions, a_dir: Path, baseline: BaselineReport,
              import_roots: list[str], result: PipelineResult) -> tuple[list[Candidate], Counter[str], list]:
        """Candidates in the order they should be tried, skip counts, and the functions considered."""
        if options.strategy == "mutation":
            from repo2rlenv.pipelines.test_synthesis.mine.mutation import mine_mutations

            return mine_mutations(a_dir, baseline, options, import_roots)
        if options.strategy == "commit_pair":
            from repo2rlenv.pipelines.test_synthesis.mine.commit_pair import mine_commit_pairs

            cands, skipped, scanned = mine_commit_pairs(ctx.source, ctx.commit, a_dir, baseline, options,
                                                        import_roots, first_parent=options.first_parent)
            functions = list({c.function.key: c.function for c in cands}.values())
        else:
            from repo2rlenv.pipelines.test_synthesis.mine.pairs_then_mutants import mine_hybrid

            cands, skipped, functions, scanned = mine_hybrid(ctx.source, ctx.commit, a_dir, baseline, options,
                                                             import_roots, first_parent=options.first_parent)
        result.stages["commits scanned"] = scanned
        several = sum(any(g.gate == SEVERAL_GATE for g in c.gates) for c in cands)
        if several:
            # Issue 33: a unit of several changed functions keeps its main one's change only (commit_pair.py).
            result.stages["units of several functions, B reverses the main one alone"] = several
        return cands, skipped, functions

    @staticmethod
    def model_needed(options: BaseModel) -> bool | None:
        """True when the options need a model (`oracle=llm`), False when they never use one
        (`oracle=differential`), None when one is used if given (`auto`, `hybrid`)."""
        assert isinstance(options, TestSynthesisOptions)
        return {"llm": True, "differential": False}.get(options.oracle)

    def _llm(self, ctx: RunContext, options: TestSynthesisOptions) -> tuple[Any, Any]:
        """The model client and its ledger, or (None, None) when no model is configured or needed."""
        if not ctx.config.llm or options.oracle == "differential":
            if options.oracle == "llm":
                raise ConfigError("pipeline option 'oracle': 'llm' needs --llm provider/model")
            return None, None
        from repo2rlenv.llm import CircuitBreaker, Ledger, LLMClient, Prices

        config = ctx.config
        ledger = Ledger(ctx.out_dir / "llm-ledger.jsonl")
        for entry in ctx.model_checks:
            ledger.record(entry)
        client = LLMClient(config.llm, base_url=config.llm_base_url, api_key_env=config.api_key_env, ledger=ledger,
                           max_spend_usd=config.max_spend_usd, prices=Prices.load([config.llm], config={m: p.model_dump() for m, p in config.prices.items()}),
                           breaker=CircuitBreaker())
        return client, ledger

    def _process(self, ctx: RunContext, options: TestSynthesisOptions, gates: CandidateGates, synth: _Synth,
                 candidates: list[Candidate], result: PipelineResult, decisions: _Decisions,
                 earlier: Sequence[Candidate] = ()) -> list[Candidate]:
        """Gate candidates in batches, in the miner's order, and synthesize tasks from the survivors until
        `limit` tasks exist, the survivors of a batch from the freshest places first (`spread`; `earlier`:
        what earlier calls decided). `gates` and `synth` are the ref's runner and synthesizer or one
        commit's (`commit_driver.CommitWork`). Returns every candidate decided (the rest were never needed)."""
        per_function, journal, decided, existing = (decisions.per_function, decisions.journal, decisions.decided,
                                                    decisions.existing)
        done: list[Candidate] = []

        def enough(cand: Candidate) -> bool:
            return distinct(result) >= options.limit or per_function[cand.function.key] >= options.max_per_function

        queue = iter(candidates)
        with ctx.reporter.progress(f"candidates (up to {options.limit} tasks)", total=len(candidates)) as tick:
            while distinct(result) < options.limit and not self._over_budget(ctx, result):
                size = min(_MAX_BATCH, max(_MIN_BATCH, _BATCH_PER_TASK * (options.limit - distinct(result))))
                batch: list[Candidate] = []
                for cand in queue:
                    if enough(cand):
                        tick(f"{cand.function.qualname}: enough from this function")
                        continue
                    task_id = task_id_for(ctx.source.slug, task_ref(ctx.commit, options, cand), cand)
                    prev = decided.get(cand.candidate_id)
                    if task_id in existing or (prev is not None and prev.status == "dropped"):
                        done.append(self._resume(cand, prev, task_id in existing, task_id, result, per_function,
                                                 merged=task_id in decisions.merged))
                        tick(f"{cand.function.qualname}: decided in an earlier run")
                        continue
                    batch.append(cand)
                    if len(batch) >= size:
                        break
                if not batch:
                    break
                tick(f"gating {len(batch)} candidates", advance=0)
                with ctx.reporter.in_stage("gates"):
                    batch = list(gates.check_many(batch))
                while batch:
                    # The freshest place first, given the tasks emitted so far (this batch's included).
                    cand = spread.fresh_first(batch, (c for c in [*earlier, *done] if c.status == "emitted"))[0]
                    batch.remove(cand)
                    result.stages["gated"] += 1
                    if enough(cand) or self._over_budget(ctx, result):
                        # Gated in the same batch as the task that filled the limit (or this function's
                        # share), or past the time budget: not decided, so a rerun tries it again.
                        result.stages["gated, not needed"] += 1
                        tick(f"{cand.function.qualname}: not needed")
                        continue
                    done.append(cand)
                    self._decided.append(cand)
                    with ctx.reporter.in_stage("synthesis"):
                        self._decide(cand, options, synth, result, per_function, tick)
                    if cand.status == "emitted":
                        self._merge_new(ctx, result, decisions, tick)
                    journal.append(cand)
        return done

    def _over_budget(self, ctx: RunContext, result: PipelineResult) -> bool:
        """Whether the run is past `time_budget_min` (said once, in the summary and on the console)."""
        clock = getattr(self, "_clock", None)
        short = getattr(self, "_cannot_afford", None)  # None too before run() (the class's other callers)
        if clock is None or not (clock.passed() or short):
            return False
        if "stopped" not in result.details:
            budget = clock.minutes
            why = "spent" if clock.passed() else f"too short for what is left ({short})"
            result.details["stopped"] = f"time budget of {budget:g} min {why} (time_budget_min); a rerun continues"
            ctx.reporter.warn(f"the time budget of {budget:g} min is {why}: no new candidate is started "
                              "(rerun with a larger time_budget_min to continue)")
        return True

    def _time_report(self, ctx: RunContext) -> TimeReport:
        """Where the run's time went: stages, the baseline's slowest tests, the slowest candidates."""
        def cost(c: Candidate) -> float:
            return sum(g.duration_sec for g in c.gates) + sum(c.seconds.values())

        cands = sorted(self._decided, key=cost, reverse=True)[:5]
        worst = [SlowItem(name=f"{c.function.qualname} {c.operator or (c.commit or '')[:8]}", seconds=round(cost(c), 1),
                          detail=", ".join(f"{k} {v:.0f}s" for k, v in sorted(c.seconds.items(), key=lambda kv: -kv[1])
                                           if v >= 1)) for c in cands if round(cost(c), 1) > 0]
        base = self._baseline
        return TimeReport(budget_min=self._clock.minutes, elapsed_sec=round(time.monotonic() - self._started, 1),
                          stages_sec=ctx.reporter.seconds_by_stage(),
                          slowest_tests=slowest(base.durations) if base is not None else [],
                          slowest_candidates=worst)

    def _resume(self, cand: Candidate, prev: Candidate | None, published: bool, task_id: str,
                result: PipelineResult, per_function: Counter[str], *, merged: bool = False) -> Candidate:
        """A rerun: reuse the decision an earlier run made (its task published completely, or the
        candidate dropped for a recorded reason) instead of redoing the work. A task an earlier run merged
        into a duplicate was made (it is not remade) but takes no place under the limit."""
        cand = prev if prev is not None else cand
        result.stages["resumed"] += 1
        if published:
            cand.status, cand.task_id = "emitted", task_id
            result.emitted.append(task_id)
            if merged:
                result.stages[MERGED] += 1
            else:
                per_function[cand.function.key] += 1
        else:
            result.skip_reasons[cand.skip_reason or "unknown"] += 1
        return cand

    @staticmethod
    def _merge_new(ctx: RunContext, result: PipelineResult, decisions: _Decisions, tick: Callable[..., None]) -> None:
        """Merge duplicates as soon as a task is emitted: a merged task frees its place under `limit` (and
        its function's share), so the loop goes on to refill it."""
        report = merge_duplicates(DatasetPaths(ctx.out_dir))
        new = [m for m in report.merged if m.task_id in result.emitted and m.task_id not in decisions.merged]
        for merge in new:
            decisions.merged.add(merge.task_id)
            result.stages[MERGED] += 1
            function = _emitted_function(ctx, merge.kept)
            if function is not None and decisions.per_function[function] > 0:
                decisions.per_function[function] -= 1
            tick(f"{merge.task_id}: merged into {merge.kept} ({merge.rule}); mining on to refill it", advance=0)

    def _decide(self, cand: Candidate, options: TestSynthesisOptions, synth: _Synth, result: PipelineResult,
                per_function: Counter[str], tick: Callable[..., None]) -> None:
        """A gated candidate: drop it when the suite noticed B (unless asked to keep those), else try to
        synthesize its oracle and emit the task."""
        if cand.status == "kept" and cand.killed and options.require_surviving:
            cand.apply(Drop(SkipReason.killed))
        if cand.status == "kept":
            result.stages["survived gates"] += 1
            tick(f"{cand.function.qualname} {cand.operator}: synthesizing the oracle", advance=0)
            emitted = synth.synthesize(cand)
            if emitted:
                result.emitted.append(emitted)
                per_function[cand.function.key] += 1
        if cand.status == "dropped":
            result.skip_reasons[cand.skip_reason or "unknown"] += 1
        if cand.status == "deferred":
            result.stages[DEFERRED] += 1
            # Deferred because the time left does not afford a stage (a spent share is a drop): stage costs
            # are the run's own estimates and the clock only runs down, so every later candidate would be
            # deferred at the same stage after paying for the ones before it. No new candidate starts.
            self._cannot_afford = cand.gates[-1].detail
        tick(f"{cand.function.qualname} {cand.operator or (cand.commit or '')[:8]}: {cand.status}")

    # --- output ---------------------------------------------------------------------------------

    def _write_outputs(self, ctx: RunContext, baseline: BaselineReport, cands: list[Candidate],
                       result: PipelineResult) -> None:
        out = ctx.out_dir
        out.mkdir(parents=True, exist_ok=True)
        # Two tasks of one function can grade the same thing (dataset/dedup.py): one of them stays. The loop
        # merged as it went; this catches what it could not see (tasks of other runs in the same folder).
        merged = set(merge_duplicates(DatasetPaths(out)).by_task) & set(result.emitted)
        if merged:
            result.stages[MERGED] = len(merged)
        atomic.write_lines(out / "candidates.jsonl", (c.model_dump_json() for c in cands))
        atomic.write_text(out / "baseline.json", baseline.model_dump_json(indent=1))
        atomic.write_text(out / "summary.json", json.dumps(result.to_json(), indent=2, sort_keys=True))
        write_manifest(DatasetPaths(out))

    # --- reporting ------------------------------------------------------------------------------

    def _report_baseline(self, ctx: RunContext, baseline: BaselineReport) -> None:
        rep = ctx.reporter
        rep.info(f"{baseline.total} tests: {len(baseline.stable_passing)} stable passing, "
                 f"{len(baseline.quarantined)} quarantined, {len(baseline.skipped)} skipped "
                 f"({baseline.duration_sec:.1f}s)")
        for path, why in sorted(baseline.set_aside.items()):
            rep.info(f"  set aside (slow test file, never a gate) {path}: {why}")
        if baseline.needs_network:
            rep.info(f"tests need network: {len(baseline.needs_network)} quarantined (the sandbox has none)")
        for path, why in sorted(baseline.collection_errors.items()):
            rep.info(f"  not collected {path}: {why}")
        for nodeid, why in sorted(baseline.quarantined.items()):
            rep.info(f"  quarantined {nodeid}: {why}")
        if rep.verbose:
            for nodeid in baseline.stable_passing:
                rep.info(f"  passed  {nodeid}")
            for nodeid in baseline.skipped:
                rep.info(f"  skipped {nodeid}")

    def _report_functions(self, ctx: RunContext, baseline: BaselineReport, functions: list[FunctionRecord]) -> None:
        rows = []
        for func in functions:
            cov = baseline_coverage(baseline, func)
            tests = baseline.coverage.tests_covering(func.path, cov.function_lines) & set(baseline.stable_passing)
            rows.append([func.key, len(cov.function_lines), len(cov.covered_lines),
                         f"{cov.fraction:.0%}", len(tests)])
        ctx.reporter.table("per-function coverage on A", ["function", "lines", "covered", "cov", "tests"], rows)

    def _report_summary(self, ctx: RunContext, result: PipelineResult) -> None:
        rows = [[k, v] for k, v in result.stages.items()]
        rows += [[f"dropped: {k}", v] for k, v in sorted(result.skip_reasons.items())]
        rows.append(["emitted", len(result.emitted)])
        ctx.reporter.table("summary", ["stage", "count"], rows)
        for dep in result.details.get("dropped dependencies", []):
            ctx.reporter.info(f"dropped from the environment: {dep['spec']} ({dep['source']}): {dep['reason']}")
        if result.stages[MERGED]:
            ctx.reporter.info(f"{distinct(result)} distinct tasks: {result.stages[MERGED]} merged into duplicates "
                              f"(dedup.json), {result.stages[REFILLED]} refilled by mining on")
        places = result.details.get("spread")
        if result.emitted and places:
            ctx.reporter.info("tasks spread over " + ", ".join(f"{n} {name}" for name, n in places.items()))
        inputs = result.details.get("oracle_inputs")
        if result.emitted and inputs:
            typed = sum(n for source, n in inputs.items() if source in TYPE_CONSISTENT)
            ctx.reporter.info(f"oracles whose inputs keep the parameters' types: {typed} of {len(result.emitted)} ("
                              + ", ".join(f"{source} {n}" for source, n in sorted(inputs.items())) + ")")
        by_strategy = result.details.get("tasks_by_strategy")
        if result.emitted and by_strategy:
            ctx.reporter.info(f"tasks from real history: {by_strategy.get('commit_pair', 0)}, "
                              f"from mutants: {by_strategy.get('mutation', 0)}")
        origins = result.details.get("oracle_origin")
        if result.emitted and origins:
            ctx.reporter.info("oracles written by: " + ", ".join(f"{origin} {n}" for origin, n in sorted(origins.items())))
        short = result.details.get("advice")
        if short:
            # The one line a user needs when the table shows nothing emitted (issue 14): why, and what to try.
            ctx.reporter.warn(short["line"])

"""From a gated candidate to a published task: oracle → the whole suite on B → its coverage → siblings →
twin kinds → task tree → validation.

Each step can drop the candidate with a recorded reason; only a task whose oracle scores exactly 1.0
under its own verifier (and whose empty submission scores 0.0) is kept in the dataset.
"""

from __future__ import annotations

import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from repo2rlenv.baseline.junit import Outcome
from repo2rlenv.baseline.runner import BaselineReport, SuiteRunner
from repo2rlenv.pipelines.test_synthesis.candidates import Candidate, GateResult, SkipReason
from repo2rlenv.dataset.leaks import InstructionLeak
from repo2rlenv.pipelines.test_synthesis.emit.emit import TaskSpec, task_hash, task_id_for, write_task
from repo2rlenv.pipelines.test_synthesis.options import TestSynthesisOptions
from repo2rlenv.pipelines.test_synthesis.oracle.calls_only import calls_only
from repo2rlenv.pipelines.test_synthesis.oracle.sandbox_runner import VariantRunner, WorkCopies
from repo2rlenv.pipelines.test_synthesis.emit.twins import VariantTexts, checked_kinds
from repo2rlenv.sandbox.install import InstallPlan
from repo2rlenv.verifiers.config_model import VariantDiffs, VerifierConfig


# Quarantined tests deselected from the whole-suite run on B at most (an argv stays well under its limit).
_MAX_DESELECT = 2000


# Where an oracle's inputs came from, strongest first (`InputSource`, and "model" for an LLM's).
INPUT_RANK = ("recorded", "perturbed", "generated", "guessed", "model")


def weakest_inputs(sources: list[str]) -> str:
    return max(sources, key=lambda s: INPUT_RANK.index(s) if s in INPUT_RANK else len(INPUT_RANK))


def _survived(cand: Candidate) -> bool:
    """Whether `cand` went through the gates and the covering tests missed it."""
    return bool(cand.gates) and cand.killed is False and all(g.passed for g in cand.gates)


# How far `_siblings` looks: this many candidates per sibling wanted, gated this many at a time.
SIBLING_SEARCH_FACTOR, SIBLING_CHUNK = 8, 8


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
    validator: Callable[[Path], Any] | None
    llm_client: Any = None  # a repo2rlenv.llm ChatClient when --llm is given
    gates: Any = None  # the run's GateRunner, for sibling mutants
    siblings_of: Callable[[Candidate], list[Candidate]] | None = None  # other candidates of the same function
    # Files the environment's build wrote into the workspace (generated.py): part of every task's repo.
    generated: dict[str, str] = field(default_factory=dict)
    # pytest plugins installed in the environment, loaded with -p in graded runs (pytest_setup.graded_plugins).
    pytest_plugins: list[str] = field(default_factory=list)
    native_exposed: list[str] = field(default_factory=list)  # memory primitives the project's import loads


def tests_dir(baseline: BaselineReport) -> str:
    """Where the repo keeps its tests (the most common directory of its test files)."""
    dirs = Counter(n.split("::")[0].rsplit("/", 1)[0] if "/" in n.split("::")[0] else "" for n in baseline.stable_passing)
    return dirs.most_common(1)[0][0] if dirs else "tests"


def _function_source(a_dir: Path, cand: Candidate) -> str:
    lines = (a_dir / cand.function.path).read_text(encoding="utf-8").splitlines(keepends=True)
    return "".join(lines[cand.function.lineno - 1: cand.function.end_lineno])


def _existing_test_files(cand: Candidate) -> list[str]:
    files = Counter(n.split("::")[0] for n in cand.covering_tests)
    return [f for f, _ in files.most_common()]


class Synthesizer:
    """Turns kept candidates into tasks, one at a time."""

    def __init__(self, ctx: SynthesisContext):
        self.ctx = ctx
        self.copies = WorkCopies(ctx.suite)
        self.test_dir = tests_dir(ctx.baseline)

    def _run_tests(self, files: dict[str, str], tests: list[str], *, coverage: bool,
                   timeout: float | None = None, extra_args: list[str] | None = None):
        root = self.copies.make(files)
        try:
            return self.ctx.suite.run(root=root, tests=tests, with_coverage=coverage, extra_args=extra_args,
                                      timeout=timeout or self.ctx.options.mutant_timeout_sec * 2)
        finally:
            self.copies.drop(root)

    def _suite_on_b(self, cand: Candidate) -> str | None:
        """Run the repo's whole suite on B once; why the task is wrong when a stable-passing test does not
        pass there (None when none fails). The gates ran only the tests covering the changed line; a change
        the rest of the suite catches (through another caller, a subtest, a doctest) is not a test gap.
        Quarantined tests are deselected: they fail on A already, and tests that wait for a network are
        slow to fail."""
        baseline = self.ctx.baseline
        deselect = [a for t in sorted(baseline.quarantined)[:_MAX_DESELECT] for a in ("--deselect", t)]
        run = self._run_tests(cand.files_b, [], coverage=False, timeout=self.ctx.options.suite_timeout_sec,
                              extra_args=deselect)
        if run.timed_out:
            return f"the whole suite did not finish on B within {self.ctx.options.suite_timeout_sec:.0f}s"
        # A stable test missing on B was not collected there (B broke its module's import): it did not pass.
        noticed = [t for t in baseline.stable_passing
                   if t not in run.results or run.results[t].outcome != Outcome.passed]
        if not noticed:
            return None
        first = run.results.get(noticed[0])
        why = first.message if first is not None and first.message else "not collected on B"
        return f"{len(noticed)} of {len(baseline.stable_passing)} stable tests fail on B, first {noticed[0]}: {why}"

    def _twin_kinds(self, cand: Candidate, test_path: str, oracle: str,
                    siblings: list[Candidate]) -> tuple[str, ...] | None:
        """The twin kinds whose sampled twins of A still pass the covering tests and the oracle, and whose
        twin of B fails the oracle (`twins.checked_kinds`)."""
        changed = sorted({p for c in [cand, *siblings] for p in c.files_b})
        a_files = {p: (self.ctx.a_dir / p).read_text(encoding="utf-8") for p in changed if (self.ctx.a_dir / p).is_file()}
        texts = VariantTexts(a_files, [{**a_files, **c.files_b} for c in [cand, *siblings]])

        def a_passes(files: dict[str, str]) -> bool:
            run = self._run_tests({**files, test_path: oracle}, [*cand.covering_tests, test_path], coverage=False)
            return bool(run.results) and not run.not_passed() and not run.timed_out

        def b_fails(files: dict[str, str]) -> bool:
            return self._caught(self._run_tests({**files, test_path: oracle}, [test_path], coverage=False))

        return checked_kinds(texts, a_passes=a_passes, b_fails=b_fails)

    def _siblings(self, cand: Candidate, test_path: str, oracle: str) -> tuple[list[Candidate], str, list[str]]:
        """Up to `siblings` more changes of the same function that the suite misses and the oracle catches,
        so a submission graded against all of them cannot overfit one change (the graded reward's `ms`),
        and the oracle, extended with tests a search aimed at a sibling found when it missed that one, with
        where the added tests' inputs came from."""
        ctx, opts = self.ctx, self.ctx.options
        want = opts.siblings
        if want <= 0 or ctx.gates is None or ctx.siblings_of is None:
            return [], oracle, []
        found: list[Candidate] = []  # siblings only an assertion catches
        spare: list[Candidate] = []  # siblings that crash where A returns
        inputs: list[str] = []
        seen = {tuple(sorted(cand.files_b.items()))}
        # An extended oracle pays only in the gated form: the RFC's b_fail counts its cases that pass on B.
        searches = want if opts.sibling_oracles and opts.reward_mode == "gated" else 0
        # Most mutants of a well-tested function are killed: look well past `want`, gating a chunk at a
        # time (one worker batch when the runner has one) and stopping once enough are found.
        pool = [other for other in ctx.siblings_of(cand)[: want * SIBLING_SEARCH_FACTOR]
                if tuple(sorted(other.files_b.items())) not in seen and (other.status == "pending" or _survived(other))]
        # Candidates the run gated already are not gated again: those that survived are reused as they are.
        gated = [other.model_copy(deep=True) for other in pool if other.status != "pending"]
        pending = [other for other in pool if other.status == "pending"]
        check_many = getattr(ctx.gates, "check_many", None)
        chunks = [gated] + [pending[i:i + SIBLING_CHUNK] for i in range(0, len(pending), SIBLING_CHUNK)]
        for n, chunk in enumerate(chunks):
            if n:
                chunk = [other.model_copy(deep=True) for other in chunk]
                chunk = check_many(chunk) if check_many else [ctx.gates.check(other) for other in chunk]
            for other in chunk:
                text = tuple(sorted(other.files_b.items()))
                if not _survived(other) or text in seen:
                    continue
                caught = self._catches(oracle, other, test_path)
                if not caught and searches > 0:
                    searches -= 1
                    extended = self._extended_oracle(oracle, other, test_path, suffix=f"s{len(inputs) + 1}")
                    if extended is not None:
                        (oracle, source), caught = extended, True
                        inputs.append(source)
                if not caught:
                    continue
                seen.add(text)
                # A sibling the oracle's bare calls catch (it crashes) pays a file that asserts nothing: such
                # siblings are kept only to fill up when too few change a value.
                bare = calls_only(oracle)
                (spare if bare is not None and self._catches(bare, other, test_path) else found).append(other)
                if len(found) == want:
                    return found, oracle, inputs
        return found + spare[: want - len(found)], oracle, inputs

    def _catches(self, oracle: str, other: Candidate, test_path: str) -> bool:
        return self._caught(self._run_tests({**other.files_b, test_path: oracle}, [test_path], coverage=False))

    def _caught(self, run) -> bool:
        """Whether the oracle's run on a B-side variant is a kill as the reward counts it: in the gated form
        some test fails (a sibling's tests pass on B, B's on the sibling); in the RFC form, whose b_fail is
        the share of cases failing, every one does."""
        if not run.results or run.timed_out:
            return False
        return bool(run.not_passed()) if self.ctx.options.reward_mode == "gated" else not run.passed()

    def _extended_oracle(self, oracle: str, other: Candidate, test_path: str, suffix: str) -> tuple[str, str] | None:
        """The oracle plus the tests a model-free search finds for `other` (`merge`), when the whole still
        passes on A, catches `other`, and fits the submission size limit, with where its inputs came from;
        else None."""
        from repo2rlenv.pipelines.test_synthesis.oracle.llm import context_for_candidate, synthesize_hybrid
        from repo2rlenv.pipelines.test_synthesis.oracle.merge import merge_tests

        ctx, opts = self.ctx, self.ctx.options
        runner = VariantRunner(ctx.suite, other.files_b, timeout=opts.mutant_timeout_sec * 4)
        context = context_for_candidate(other, ctx.a_dir, test_path, opts)
        search = synthesize_hybrid(client=None, runner=runner, context=context, covering_tests=other.covering_tests,
                                   max_attempts=1, seed=opts.seed)
        if not search.found or not search.test_source:
            return None
        merged = merge_tests(oracle, search.test_source, suffix)
        if merged is None or sum(1 for line in merged.splitlines() if line.strip()) > opts.max_test_loc:
            return None
        on_a = self._run_tests({test_path: merged}, [test_path], coverage=False)
        if not on_a.results or on_a.not_passed() or on_a.timed_out or not self._catches(merged, other, test_path):
            return None
        inputs = search.differential.inputs
        return merged, inputs.value if inputs is not None else "model"

    def oracle_kind(self) -> str:
        """`auto` means differential without a model and hybrid with one (issue 5)."""
        kind = self.ctx.options.oracle
        if kind == "auto":
            return "hybrid" if self.ctx.llm_client is not None else "differential"
        return kind

    def _oracle(self, cand: Candidate, test_path: str) -> tuple[str, str, int, str | None, str] | None:
        """(oracle source, kind that found it, model attempts, model, where its inputs came from: an
        `InputSource`, or "model") or None with `cand` dropped."""
        from repo2rlenv.pipelines.test_synthesis.oracle.llm import (
            context_for_candidate,
            synthesize_hybrid,
            synthesize_llm,
        )

        ctx, opts = self.ctx, self.ctx.options
        runner = VariantRunner(ctx.suite, cand.files_b, timeout=opts.mutant_timeout_sec * 4)
        context = context_for_candidate(cand, ctx.a_dir, test_path, opts)
        kind = self.oracle_kind()
        if kind == "llm":
            llm = synthesize_llm(client=ctx.llm_client, runner=runner, context=context,
                                 max_attempts=opts.max_attempts)
            if not llm.found or not llm.test_source:
                cand.drop(llm.reason or SkipReason.no_oracle, llm.detail or "")
                return None
            return llm.test_source, "llm", len(llm.attempts), llm.model, "model"
        both = synthesize_hybrid(client=ctx.llm_client if kind == "hybrid" else None, runner=runner,
                                 context=context, covering_tests=cand.covering_tests,
                                 max_attempts=opts.max_attempts, seed=opts.seed)
        if not both.found or not both.test_source:
            cand.drop(both.reason or SkipReason.no_oracle, both.detail or "")
            return None
        from_model = both.kind is not None and both.kind.value == "llm"
        inputs = "model" if from_model or both.differential.inputs is None else both.differential.inputs.value
        return (both.test_source, both.kind.value if both.kind else kind, max(1, both.attempts), both.synthesis_llm,
                inputs)

    def synthesize(self, cand: Candidate) -> str | None:
        """Make and publish the task for `cand`; returns its id, or None with `cand` dropped."""
        ctx, opts, func = self.ctx, self.ctx.options, cand.function
        hash8 = task_hash(ctx.repo_slug, ctx.ref, cand)
        test_path = f"{self.test_dir}/test_r2e_{hash8}.py" if self.test_dir else f"test_r2e_{hash8}.py"
        oracle_run = self._oracle(cand, test_path)
        if oracle_run is None:
            return None
        oracle, oracle_kind, attempts, model, inputs = oracle_run
        # After the oracle (most survivors never get one), before the siblings and twins (many runs each).
        noticed = self._suite_on_b(cand)
        if noticed is not None:
            cand.drop(SkipReason.suite_notices_b, noticed)
            return None
        cand.gates.append(GateResult(gate="whole suite on B", passed=True,
                                     detail=f"{len(self.ctx.baseline.stable_passing)} stable tests pass on B"))
        siblings, oracle, added = self._siblings(cand, test_path, oracle)
        inputs = weakest_inputs([inputs, *added])
        bare = calls_only(oracle)
        b_crashes = bare is not None and self._catches(bare, cand, test_path)
        # Which of the function's lines the oracle (as extended for the siblings) runs on A: the coverage
        # term's reachable targets and the lines the gated coverage term is relative to.
        run = self._run_tests({test_path: oracle}, [test_path], coverage=True)
        if run.not_passed() or not run.results or run.coverage is None:
            cand.drop(SkipReason.oracle_not_perfect, "oracle does not pass on A in the sandbox")
            return None
        uncovered = cand.baseline.uncovered if cand.baseline else []
        targets = sorted(run.coverage.covered_lines(func.path, uncovered))
        function_lines = cand.baseline.function_lines if cand.baseline else list(func.body_lines)
        # What the gated coverage term is relative to: meaningful when the suite already runs every line.
        oracle_lines = sorted(run.coverage.covered_lines(func.path, function_lines))
        kinds = self._twin_kinds(cand, test_path, oracle, siblings)
        if kinds is None:
            cand.drop(SkipReason.aprime_broken, "no set of twin kinds keeps the covering tests and the oracle passing")
            return None
        config = VerifierConfig(
            submission=test_path, target_file=func.path, target_qualname=func.qualname,
            function_lines=function_lines, coverage_targets=targets, oracle_lines=oracle_lines,
            mutation_weight=opts.mutation_weight, baseline_full_coverage=not uncovered,
            import_roots=ctx.install.import_roots, reward_mode=opts.reward_mode,
            coverage_weight=opts.coverage_weight, min_new_tests=opts.min_new_tests, max_test_loc=opts.max_test_loc,
            run_timeout_sec=opts.verifier_run_timeout_sec, memory_mb=min(opts.memory_mb, 4096),
            variants=VariantDiffs(siblings=[f"siblings/{i:02d}.diff" for i in range(1, len(siblings) + 1)]),
            twin_runs=opts.twin_runs, twin_kinds=list(kinds), case_timeout_sec=opts.verifier_case_timeout_sec,
            pytest_plugins=list(ctx.pytest_plugins), native_exposed=list(ctx.native_exposed),
        )
        spec = TaskSpec(
            task_id=task_id_for(ctx.repo_slug, ctx.ref, cand), test_path=test_path, repo=ctx.repo,
            repo_slug=ctx.repo_slug, ref=ctx.ref, pipeline_version=ctx.pipeline_version, candidate=cand,
            oracle_source=oracle, oracle_kind=oracle_kind, oracle_attempts=attempts, synthesis_llm=model,
            oracle_inputs=inputs, b_crashes=b_crashes,
            twin_kinds=list(kinds),
            verifier_config=config.model_dump(mode="json"), base_image=ctx.install.base_image, install=ctx.install,
            existing_test_files=_existing_test_files(cand), sibling_diffs=[sib.diff for sib in siblings],
            generated_files=ctx.generated,
        )
        try:
            task = write_task(spec, opts, ctx.a_dir, ctx.tasks_root)
        except InstructionLeak as leak:
            cand.drop(SkipReason.validation_failed, str(leak))
            return None
        if ctx.validator is not None:
            verdict = ctx.validator(task.root)
            if not verdict.ok:
                shutil.rmtree(task.root, ignore_errors=True)
                cand.drop(SkipReason.validation_failed, "; ".join(verdict.problems))
                return None
        cand.status = "emitted"
        cand.task_id = spec.task_id
        return spec.task_id

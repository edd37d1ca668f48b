"""Per-commit gating for commit_pair with `pair_base=commit`: every pair is judged in its own commit's world.

A pair's A is its commit's tree, so the gates and the oracle cannot run in the ref's session. For each
commit this module snapshots the tree, gets a session of the environment of its dependency spec
(`sandbox/environments.py`), runs the suite there with a rerun (flaky tests quarantined) and drops the
commit's pairs, with the reason, when:
- its environment does not build, or the suite does not run at all;
- the suite fails at the commit: a test fails in every run there that does not also fail at the ref (a
  test failing at the ref too is taken as the environment's, not the commit's — an optional tool
  missing, a newer interpreter). Tests are matched by their name inside the file (`test_x[param]`), as
  suites move tests between files over time;
- B's diff does not apply cleanly to the commit's tree, or the suite never imports the touched module.
A change that carries its own tests is judged with the parent's version of those test files written over
its tree (`Candidate.tests_a`): the suite on A is the one that missed the change. Where the change edited
an existing test, the parent's version must still pass on A; when it fails there the existing suite
already notices the change, and the commit is dropped with that reason (never a workspace of mixed tests).
The pairs that are left are gated and synthesized against that session, baseline and tree, and the task
carries the commit as its ref and the commit's tree as its environment.

What runs at a commit before its gates is the test files that cover or name its change (`gate/scope.py`,
`gate_scope=covering`): they decide whether its pairs survive. The whole suite runs there once, when a
pair of the commit has an oracle (the late gate needs it on A and on B); a failure it finds then drops the
commit's remaining pairs with the same reasons as above. Each commit's time is recorded (summary.json,
`commit_pair.seconds`).

`judge_at_commits` yields one `CommitWork` per commit, in the miner's order: the commit's pairs and a
gate runner (`check_many`) and synthesizer (`synthesize`) bound to that commit's world, so the pipeline's
candidate loop runs over each unchanged. A commit's session opens at its first gate (a rerun whose pairs
were all decided before opens none); one session is open at a time, and a commit's baseline is kept until
its last pair is decided.
"""

from __future__ import annotations

import dataclasses
import shutil
import statistics
import time
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, Callable, Iterator

from repo2rlenv.baseline.coverage_map import CoverageMap
from repo2rlenv.baseline.runner import BaselineReport, SuiteRunner, run_baseline
from repo2rlenv.errors import BaselineError, SandboxError, SourceError
from repo2rlenv.pipelines.base import PipelineResult, RunContext
from repo2rlenv.pipelines.test_synthesis.candidates import Candidate, Drop, GateResult
from repo2rlenv.pipelines.test_synthesis.gate.scope import Scope, commit_scope
from repo2rlenv.pipelines.test_synthesis.mine.mutation import mutants_of
from repo2rlenv.pipelines.test_synthesis.gate.batch import BatchGateRunner, gate_runner_for
from repo2rlenv.pipelines.test_synthesis.options import TestSynthesisOptions
from repo2rlenv.discovery.native_needs import graded_plugins_under_barrier, session_native_needs
from repo2rlenv.sandbox.generated import generated_files
from repo2rlenv.pipelines.test_synthesis.survivor_driver import SynthesisContext, Synthesizer
from repo2rlenv.pipelines.test_synthesis.emit.validation import task_validator
from repo2rlenv.sandbox.environments import EnvironmentBuildError, EnvironmentPool, EnvSession
from repo2rlenv.sandbox.install import InstallPlan
from repo2rlenv.sources import RepoSource, snapshot
from repo2rlenv.verifiers.test_synthesis.verifier_patch import PatchError, apply_diff, touched_paths

# The baseline quarantines a test that flipped between runs with a reason starting so; any other
# reason means it failed in every run.
_FLAKY_PREFIX = "flaky"


class CommitDrop(StrEnum):
    """Why a commit's pairs were dropped before their gates (counted as skip reasons)."""

    environment = "commit: environment does not build"
    suite_broken = "commit: suite does not run at the commit"
    suite_fails = "commit: suite fails at the commit"
    parent_suite_notices = "commit: the parent's tests fail on the change (they notice it)"
    not_applying = "commit: B does not apply to the commit's tree"
    not_imported = "commit: module not imported by the suite"


def judged_at_commit(options: TestSynthesisOptions, cand: Candidate) -> bool:
    """Whether `cand` is judged at its own commit (a commit pair with `pair_base=commit`)."""
    return cand.strategy == "commit_pair" and options.pair_base == "commit"


def split_pairs(options: TestSynthesisOptions, candidates: list[Candidate]) -> tuple[list[Candidate], list[Candidate]]:
    """(the candidates judged at their own commits, the ones judged at the ref), each in the miner's order."""
    mine = [c for c in candidates if judged_at_commit(options, c)]
    return mine, [c for c in candidates if not judged_at_commit(options, c)]


def task_ref(ref: str | None, options: TestSynthesisOptions, cand: Candidate) -> str | None:
    """The ref a candidate's task is built at, and its id hashed with: its own commit when it is judged
    there, else the run's ref. The id is the same in every run that yields the candidate."""
    return cand.commit if judged_at_commit(options, cand) else ref


def failing_tests(baseline: BaselineReport) -> set[str]:
    """Tests that failed in every baseline run (quarantined, but not as flaky)."""
    return {n for n, why in baseline.quarantined.items() if not why.startswith(_FLAKY_PREFIX)}


def _name_in_file(nodeid: str) -> str:
    """`tests/test_a.py::TestX::test_y[1]` → `TestX::test_y[1]`."""
    return nodeid.split("::", 1)[-1]


def patch_problem(cand: Candidate, tree: Path) -> str | None:
    """Why the candidate's diff does not take `tree` to exactly its B files (None when it does)."""
    try:
        files = {p: (tree / p).read_text(encoding="utf-8") for p in touched_paths(cand.diff) if (tree / p).is_file()}
        patched = apply_diff(cand.diff, files)
    except (PatchError, OSError, UnicodeDecodeError) as exc:
        return str(exc)
    if patched != cand.files_b:
        return "the diff and the B files disagree"
    return None


@dataclass(slots=True)
class _Commit:
    """What one commit's pairs are judged against; `dropped` set when the whole commit is out."""

    sha: str
    tree: Path
    # The parent's test files written over the commit's tree (a change that carries its own tests): A's
    # suite is the parent's, the one that missed the change. The change's changelog, news fragments and
    # documentation go back to the parent's too (nothing in A describes the change). Kept to rebuild A
    # when the tree is released.
    tests_a: dict[str, str | None] = dataclasses.field(default_factory=dict)
    baseline: BaselineReport | None = None
    # The test files `baseline` ran (None until it runs); not whole: the whole suite is still to run
    # before the commit's first task (`whole`, once it has).
    scope: Scope | None = None
    whole: BaselineReport | None = None
    functions: list[Any] = dataclasses.field(default_factory=list)  # the FunctionRecords its pairs change
    seconds: float = 0.0  # time spent judging it (gates, oracles, emission)
    key: str | None = None
    plan: InstallPlan | None = None
    suite_note: str = ""
    dropped: tuple[CommitDrop, str] | None = None
    undecided: set[str] = dataclasses.field(default_factory=set)


@dataclass(slots=True)
class _Active:
    """The open session of one commit and what runs in it."""

    commit: _Commit
    env: EnvSession
    runner: SuiteRunner
    gates: BatchGateRunner | None = None
    synth: Synthesizer | None = None


class CommitGating:
    """Gate runner and synthesizer for commit_pair candidates, each against its own commit."""

    def __init__(self, *, source: RepoSource, pool: EnvironmentPool, options: TestSynthesisOptions, work_dir: Path,
                 synthesis: SynthesisContext, run: RunContext | None = None, known_failures: set[str] | None = None,
                 ref_coverage: CoverageMap | None = None, progress: Callable[[str], None] | None = None):
        """`synthesis` is the run's context (its suite, baseline, tree, ref and validator are replaced per
        commit); `run` the run whose task validation each commit's tasks get (None: the run-wide
        validator of `synthesis`); `known_failures` the tests failing at the ref; `ref_coverage` the ref's
        per-test coverage (which test files ran a changed file there: part of a commit's scope)."""
        self.source = source
        self.pool = pool
        self.options = options
        self.work_dir = work_dir
        self.synthesis = synthesis
        self.run = run
        self.known_failures = known_failures or set()
        self.ref_coverage = ref_coverage
        self.say = progress or (lambda _msg: None)
        self.commits: dict[str, _Commit] = {}
        self.active: _Active | None = None
        self.drops: dict[str, str] = {}  # commit → reason, for the summary

    # --- the pipeline's gate-runner / synthesizer shape -----------------------------------------

    def check_many(self, candidates: list[Candidate]) -> list[Candidate]:
        """Gate every candidate (in place) in its commit's session; returns them in the same order."""
        groups: dict[str, list[Candidate]] = {}
        for cand in candidates:
            groups.setdefault(self._sha(cand), []).append(cand)
        for sha, group in groups.items():
            started = time.monotonic()
            try:
                self._gate_commit(sha, group)
            finally:
                self.commits[sha].seconds += time.monotonic() - started
        return candidates

    def check(self, cand: Candidate) -> Candidate:
        return self.check_many([cand])[0]

    def synthesize(self, cand: Candidate) -> str | None:
        """Make the task of a kept candidate in its commit's session; None with `cand` dropped."""
        commit = self.commits[self._sha(cand)]
        started = time.monotonic()
        try:
            # The commit went away between gating and synthesis: a session error, or its whole suite
            # failed on A when an earlier pair of it got an oracle.
            active = self._activate(commit) if commit.dropped is None else None
            if active is None:
                assert commit.dropped is not None
                cand.drop(commit.dropped[0].value, commit.dropped[1])
                return None
            if active.synth is None:
                active.synth = Synthesizer(self._synthesis_context(active))
            return active.synth.synthesize(cand)
        finally:
            commit.seconds += time.monotonic() - started
            self._decided(commit, cand)

    def close(self) -> None:
        """Close the open session and remove every commit's tree."""
        self._deactivate()
        for commit in self.commits.values():
            shutil.rmtree(commit.tree, ignore_errors=True)

    def summary(self) -> dict[str, Any]:
        """Commits judged, commits dropped per reason, and the environments used (for summary.json)."""
        reasons: dict[str, int] = {}
        for why in self.drops.values():
            reasons[why] = reasons.get(why, 0) + 1
        seconds = {sha: round(c.seconds, 1) for sha, c in self.commits.items()}
        return {"commits": len(self.commits), "commits_dropped": reasons,
                "environments": self.pool.summary(),
                "environment_of": {sha: c.key for sha, c in self.commits.items() if c.key},
                "scope_of": {sha: c.scope.note for sha, c in self.commits.items() if c.scope is not None},
                "seconds": seconds,
                "seconds_per_commit": {"mean": round(statistics.fmean(seconds.values()), 1) if seconds else None,
                                       "median": round(statistics.median(seconds.values()), 1) if seconds else None,
                                       "max": max(seconds.values(), default=None)}}

    # --- one commit -----------------------------------------------------------------------------

    @staticmethod
    def _sha(cand: Candidate) -> str:
        if cand.strategy != "commit_pair" or not cand.commit:
            raise ValueError(f"{cand.candidate_id} is not a commit pair")
        return cand.commit

    def _commit(self, sha: str, group: list[Candidate]) -> _Commit:
        if sha not in self.commits:
            tests_a: dict[str, str | None] = {}
            for cand in group:
                tests_a.update({**cand.notes_a, **cand.tests_a})
            self.commits[sha] = _Commit(sha=sha, tree=self._tree(sha, tests_a), tests_a=tests_a)
        known = {fn.key for fn in self.commits[sha].functions}
        self.commits[sha].functions += [c.function for c in group if c.function.key not in known]
        return self.commits[sha]

    def _tree(self, sha: str, tests_a: dict[str, str | None]) -> Path:
        """A of the commit: its snapshot with the parent's version of the test and note files it touched."""
        tree = snapshot(self.source, sha, self.work_dir / "commits" / sha[:16])
        for rel, text in tests_a.items():
            path = tree / rel
            if not path.resolve().is_relative_to(tree.resolve()):
                raise SourceError(f"commit {sha[:12]}: test path {rel!r} leaves the commit's tree")
            if text is None:
                path.unlink(missing_ok=True)
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
        return tree

    def _gate_commit(self, sha: str, group: list[Candidate]) -> None:
        commit = self._commit(sha, group)
        active = self._activate(commit)
        notes = [GateResult(gate="environment", passed=commit.dropped is None or commit.key is not None,
                            detail=commit.key or "")]
        if commit.baseline is not None:
            gate = "suite passes on A" if commit.scope is None or commit.scope.whole else "covering tests pass on A"
            notes.append(GateResult(gate=gate, passed=True, detail=commit.suite_note))
        todo: list[Candidate] = []
        for cand in group:
            why = self._candidate_problem(commit, cand)
            if why is not None:
                cand.gates = [*notes, *cand.gates]
                cand.drop(why[0].value, why[1])
                continue
            todo.append(cand)
        if not todo or active is None:
            return
        if active.gates is None:
            assert commit.baseline is not None
            active.gates = gate_runner_for(self.options, active.runner, commit.baseline)
        self.say(f"{sha[:12]}: gating {len(todo)} pair(s) in environment {commit.key}")
        active.gates.check_many(todo)
        for cand in todo:
            # Put the commit-level gates first; a gate runner may have started the record afresh.
            cand.gates = [*notes, GateResult(gate="B applies to A", passed=True), *cand.gates]
            if cand.status == "kept" and not (cand.killed and self.options.require_surviving):
                commit.undecided.add(cand.candidate_id)
        if not commit.undecided:
            self._release(commit)

    def _candidate_problem(self, commit: _Commit, cand: Candidate) -> tuple[CommitDrop, str] | None:
        if commit.dropped is not None:
            return commit.dropped
        problem = patch_problem(cand, commit.tree)
        if problem is not None:
            return CommitDrop.not_applying, problem
        assert commit.baseline is not None
        measured = commit.baseline.coverage.files.get(cand.function.path)
        # coverage.py also lists files under its `source` that nothing imported, with no line executed.
        if measured is None or not measured.executed:
            return CommitDrop.not_imported, cand.function.path
        return None

    def _activate(self, commit: _Commit) -> _Active | None:
        """The commit's open session (opening it, and running its baseline the first time); None when
        the commit is dropped."""
        if self.active is not None and self.active.commit is commit:
            return self.active
        self._deactivate()
        if commit.dropped is not None:
            return None
        if not commit.tree.exists():  # released earlier: its pairs come back (a rerun of the loop)
            commit.tree = self._tree(commit.sha, commit.tests_a)
        try:
            env = self.pool.session_for(commit.tree)
        except EnvironmentBuildError as exc:
            return self._drop(commit, CommitDrop.environment, str(exc))
        commit.key, commit.plan = env.key, env.plan
        active = _Active(commit=commit, env=env, runner=SuiteRunner(env.session, env.plan.import_roots))
        self.active = active
        if commit.baseline is None:
            self._baseline(commit, active.runner)
            if commit.dropped is not None:
                self._deactivate()
                return None
        return active

    def _baseline(self, commit: _Commit, runner: SuiteRunner) -> None:
        scope = commit_scope(commit.tree, commit.functions, roots=runner.suite_paths,
                             patterns=runner.pytest_setup.python_files, ref_coverage=self.ref_coverage,
                             enabled=self.options.gate_scope == "covering")
        self.say(f"{commit.sha[:12]}: the suite at the commit, {scope.note} (environment {commit.key})")
        baseline = self._suite_at(commit, runner, scope.files)
        if baseline is None:
            return
        commit.scope = scope
        commit.baseline = baseline
        if scope.whole:
            commit.whole = baseline
        commit.suite_note = (f"{scope.note}: {len(baseline.stable_passing)} stable, "
                             f"{len(baseline.quarantined)} quarantined, {len(baseline.skipped)} skipped")

    def _suite_at(self, commit: _Commit, runner: SuiteRunner, tests: list[str] | None) -> BaselineReport | None:
        """The baseline of `tests` (None: the whole suite) at the commit, or None with the commit dropped:
        the suite does not run, or a test fails there that does not fail at the ref."""
        try:
            baseline = run_baseline(runner, reruns=max(1, self.options.baseline_reruns),
                                    timeout=self.options.suite_timeout_sec, tests=tests)
        except (BaselineError, SandboxError) as exc:
            return self._drop(commit, CommitDrop.suite_broken, str(exc))
        known = {_name_in_file(n) for n in self.known_failures}
        new_failures = sorted(n for n in failing_tests(baseline) if _name_in_file(n) not in known)
        if new_failures:
            shown = ", ".join(new_failures[:3]) + (f" and {len(new_failures) - 3} more" if len(new_failures) > 3 else "")
            # With the parent's tests on A, a failure is a parent test the change had to edit: the existing
            # suite already tells A from B, so the change is no test gap (issue 33's rule for edited tests).
            why = CommitDrop.parent_suite_notices if commit.tests_a else CommitDrop.suite_fails
            return self._drop(commit, why, f"{len(new_failures)} failing: {shown}")
        return baseline

    def _whole_suite(self, commit: _Commit, runner: SuiteRunner) -> BaselineReport | Drop:
        """The whole suite's baseline at the commit (run once, when its first pair has an oracle), or the
        Drop of a commit whose whole suite fails on A."""
        if commit.whole is None and commit.dropped is None:
            self.say(f"{commit.sha[:12]}: a pair has an oracle: the whole suite at the commit")
            commit.whole = self._suite_at(commit, runner, None)
        if commit.whole is None:
            assert commit.dropped is not None
            return Drop(commit.dropped[0].value, commit.dropped[1])
        return commit.whole

    def _drop(self, commit: _Commit, why: CommitDrop, detail: str) -> None:
        """Drop the whole commit (its remaining pairs get the reason); returns None for the callers'
        convenience."""
        commit.dropped = (why, detail)
        self.drops[commit.sha] = why.value
        self.say(f"{commit.sha[:12]}: dropped ({why.value}): {detail[:200]}")
        return None

    def _synthesis_context(self, active: _Active) -> SynthesisContext:
        commit = active.commit
        assert commit.baseline is not None and commit.plan is not None
        validator = (task_validator(self.run, self.options, python=active.env.session.python)
                     if self.run is not None else self.synthesis.validator)
        # Siblings of a real change are mutants of its function in this tree, gated in this session
        # against the commit's baseline (issue 33: a real-history task grades like a mutation task).
        mutants: dict[str, list[Candidate]] = {}

        def siblings_of(cand: Candidate) -> list[Candidate]:
            if cand.function.key not in mutants:
                mutants[cand.function.key] = mutants_of(cand.function, commit.tree, self.options)
            return mutants[cand.function.key]

        if active.gates is None:
            active.gates = gate_runner_for(self.options, active.runner, commit.baseline)
        exposed = session_native_needs(active.env.session, commit.tree, commit.plan.import_roots)
        plugins, _ = graded_plugins_under_barrier(active.env.session, commit.plan.import_roots, exposed)
        return dataclasses.replace(self.synthesis, suite=active.runner, baseline=commit.baseline, a_dir=commit.tree,
                                   ref=commit.sha, install=commit.plan, validator=validator, gates=active.gates,
                                   siblings_of=siblings_of, generated=generated_files(active.env.session, commit.tree),
                                   pytest_plugins=plugins, native_exposed=exposed, target_needs={},
                                   whole_suite=(None if commit.whole is not None
                                                else lambda: self._whole_suite(commit, active.runner)))

    def _decided(self, commit: _Commit, cand: Candidate) -> None:
        commit.undecided.discard(cand.candidate_id)
        if not commit.undecided:
            self._release(commit)

    def _release(self, commit: _Commit) -> None:
        """A commit whose pairs are all decided: free its baseline (coverage maps are large) and tree."""
        if self.active is not None and self.active.commit is commit:
            self._deactivate()
        commit.baseline = commit.whole = None
        shutil.rmtree(commit.tree, ignore_errors=True)

    def _deactivate(self) -> None:
        if self.active is not None:
            self.active.env.close()
            self.active = None


@dataclass(slots=True)
class CommitWork:
    """One commit's pairs, in the miner's order, and the gate runner and synthesizer that judge them in
    that commit's world (both are the driver's `CommitGating`: its session opens at the first gate)."""

    sha: str
    pairs: list[Candidate]
    gates: CommitGating
    synth: CommitGating


def judge_at_commits(ctx: RunContext, options: TestSynthesisOptions, synthesis: SynthesisContext,
                     ref_baseline: BaselineReport, pairs: list[Candidate],
                     result: PipelineResult) -> Iterator[CommitWork]:
    """One `CommitWork` per commit of `pairs`, in the order its first pair was mined. Closing the
    generator (or running it out) closes the open session, removes the commits' trees and records the
    commits and environments in `result`."""
    if not pairs:
        return
    by_commit: dict[str, list[Candidate]] = {}
    for cand in pairs:
        by_commit.setdefault(CommitGating._sha(cand), []).append(cand)
    ctx.reporter.stage(f"judging {len(pairs)} commit pairs, each at its own commit")
    gating = CommitGating(source=ctx.source, pool=EnvironmentPool(ctx.sandbox), options=options,
                          work_dir=ctx.work_dir, synthesis=synthesis, run=ctx,
                          known_failures=failing_tests(ref_baseline), ref_coverage=ref_baseline.coverage,
                          progress=ctx.reporter.info)
    try:
        for sha, group in by_commit.items():
            yield CommitWork(sha=sha, pairs=group, gates=gating, synth=gating)
    finally:
        gating.close()
        summary = gating.summary()
        result.details["commit_pair"] = summary
        result.stages["commits judged"] = summary["commits"]
        result.stages["commit environments"] = len(summary["environments"])
        if summary["seconds_per_commit"]["mean"] is not None:
            result.stages["seconds per judged commit (mean)"] = summary["seconds_per_commit"]["mean"]

"""Task assembly: from a candidate with an oracle (and its siblings) to the verifier config and task spec,
then the written, validated task.

Each step returns what it measured or decided, or a `Drop` saying why the task cannot be made; the
driver (`survivor_driver.py`) records drops on the candidate. Only `publish` writes files.
"""

from __future__ import annotations

import shutil
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from repo2rlenv.baseline.runner import BaselineReport
from repo2rlenv.dataset.leaks import InstructionLeak
from repo2rlenv.pipelines.test_synthesis.candidates import Candidate, Drop, SkipReason
from repo2rlenv.pipelines.test_synthesis.emit.emit import TaskSpec, write_task
from repo2rlenv.pipelines.test_synthesis.emit.twins import VariantTexts, checked_kinds
from repo2rlenv.pipelines.test_synthesis.emit.validation import TaskValidator
from repo2rlenv.pipelines.test_synthesis.options import TestSynthesisOptions
from repo2rlenv.pipelines.test_synthesis.trials import Trials
from repo2rlenv.sandbox.install import InstallPlan
from repo2rlenv.verifiers.config_model import VariantDiffs, VerifierConfig


def tests_dir(baseline: BaselineReport) -> str:
    """Where the repo keeps its tests (the most common directory of its test files)."""
    dirs = Counter(n.split("::")[0].rsplit("/", 1)[0] if "/" in n.split("::")[0] else "" for n in baseline.stable_passing)
    return dirs.most_common(1)[0][0] if dirs else "tests"


def submission_path(test_dir: str, hash8: str) -> str:
    """The file the agent writes (and the oracle is shipped as)."""
    return f"{test_dir}/test_r2e_{hash8}.py" if test_dir else f"test_r2e_{hash8}.py"


def existing_test_files(cand: Candidate) -> list[str]:
    """The repo's test files covering the function, most covering tests first (validation submits one)."""
    files = Counter(n.split("::")[0] for n in cand.covering_tests)
    return [f for f, _ in files.most_common()]


@dataclass(frozen=True, slots=True)
class OracleLines:
    """Which of the function's lines the oracle runs on A: the coverage term's reachable targets, and the
    lines the gated coverage term is relative to."""

    function_lines: list[int]
    coverage_targets: list[int]  # uncovered by the suite, run by the oracle
    oracle_lines: list[int]  # run by the oracle: meaningful when the suite already runs every line
    baseline_full_coverage: bool


def oracle_lines(cand: Candidate, trials: Trials, test_path: str, oracle: str) -> OracleLines | Drop:
    """The oracle's (as extended for the siblings) coverage of the function on A; a drop when it does not
    pass there."""
    func = cand.function
    run = trials.run({test_path: oracle}, [test_path], coverage=True)
    if run.not_passed() or not run.results or run.coverage is None:
        return Drop(SkipReason.oracle_not_perfect, "oracle does not pass on A in the sandbox")
    uncovered = cand.baseline.uncovered if cand.baseline else []
    function_lines = cand.baseline.function_lines if cand.baseline else list(func.body_lines)
    return OracleLines(function_lines=function_lines,
                       coverage_targets=sorted(run.coverage.covered_lines(func.path, uncovered)),
                       oracle_lines=sorted(run.coverage.covered_lines(func.path, function_lines)),
                       baseline_full_coverage=not uncovered)


def twin_kinds(cand: Candidate, siblings: list[Candidate], a_dir: Path, trials: Trials, test_path: str,
               oracle: str, covering: Callable[[], list[str]] | None = None) -> tuple[str, ...] | Drop:
    """The twin kinds whose sampled twins of A still pass the covering tests (`covering()` before each run,
    default all of them) and the oracle, and whose twin of B fails the oracle (`twins.checked_kinds`)."""
    covering = covering or (lambda: cand.covering_tests)
    changed = sorted({p for c in [cand, *siblings] for p in c.files_b})
    a_files = {p: (a_dir / p).read_text(encoding="utf-8") for p in changed if (a_dir / p).is_file()}
    texts = VariantTexts(a_files, [{**a_files, **c.files_b} for c in [cand, *siblings]])
    kinds = checked_kinds(
        texts,
        a_passes=lambda files: trials.passes({**files, test_path: oracle}, [*covering(), test_path]),
        b_fails=lambda files: trials.catches(oracle, files, test_path))
    if kinds is None:
        return Drop(SkipReason.aprime_broken, "no set of twin kinds keeps the covering tests and the oracle passing")
    return kinds


def verifier_config(cand: Candidate, lines: OracleLines, *, test_path: str, siblings: int, kinds: tuple[str, ...],
                    options: TestSynthesisOptions, install: InstallPlan, pytest_plugins: list[str],
                    native_exposed: list[str] | tuple[str, ...] = ()) -> VerifierConfig:
    """verifier_config.json for the task: what is graded and how."""
    opts = options
    return VerifierConfig(
        submission=test_path, target_file=cand.function.path, target_qualname=cand.function.qualname,
        function_lines=lines.function_lines, coverage_targets=lines.coverage_targets, oracle_lines=lines.oracle_lines,
        mutation_weight=opts.mutation_weight, baseline_full_coverage=lines.baseline_full_coverage,
        import_roots=install.import_roots, reward_mode=opts.reward_mode,
        coverage_weight=opts.coverage_weight, min_new_tests=opts.min_new_tests, max_test_loc=opts.max_test_loc,
        run_timeout_sec=opts.verifier_run_timeout_sec, memory_mb=min(opts.memory_mb, 4096),
        variants=VariantDiffs(siblings=[f"siblings/{i:02d}.diff" for i in range(1, siblings + 1)]),
        twin_runs=opts.twin_runs, twin_kinds=list(kinds), case_timeout_sec=opts.verifier_case_timeout_sec,
        pytest_plugins=list(pytest_plugins), native_exposed=list(native_exposed),
    )


# How a crash that happened before the run on A ran any case is described (its whole module is then skipped).
CRASH_BEFORE_CASES = "before any case ran"


def publish(spec: TaskSpec, options: TestSynthesisOptions, a_dir: Path, tasks_root: Path,
            validator: TaskValidator | None) -> str | Drop:
    """Write the task and validate it (a task that fails is removed); its id, or why it was not kept."""
    try:
        task = write_task(spec, options, a_dir, tasks_root)
    except InstructionLeak as leak:
        return Drop(SkipReason.validation_failed, str(leak))
    if validator is not None:
        verdict = validator(task.root)
        if not verdict.ok:
            shutil.rmtree(task.root, ignore_errors=True)
            crash = verdict.a_crash()
            if crash is not None:
                line, before_cases = crash
                scope = CRASH_BEFORE_CASES if before_cases else "after cases ran"
                return Drop(SkipReason.run_crashed, f"{scope}: {line}"[:500])
            return Drop(SkipReason.validation_failed, "; ".join(verdict.problems))
    return spec.task_id

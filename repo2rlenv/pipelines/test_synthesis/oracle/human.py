"""The human-written oracle: a real change's own test cases that tell its A from its B (issue 33).

A commit pair whose change carried tests (`Candidate.tests_change`) is judged on A = the change's tree with
the parent's tests. The developers wrote tests for the change; those of them that fail on B and pass on A
are a reference file no search could beat. For each test file the change left in place (a Python file,
conftest excluded: its fixtures are the suite's, not a case), in path order:

1. its new or edited cases (`human_cases.changed_cases`), in a copy of the file cut down to them and
   written at the task's submission path (so it runs where an agent's file would, with the fixtures of
   that directory's conftest and nothing the task cannot ship);
2. the verifier's static rules (it compiles, passes the lint);
3. three runs on A, then three on B: a case is kept when each of its collected items passes in every run
   on A and fails in every run on B (stable fail-to-pass; a case that needs a file the change added, a
   fixture of another directory or a helper module breaks on A and is not kept);
4. the file cut down to the kept cases must fit `max_test_loc`, hold `min_new_tests` cases, and in one
   more run on each side pass on A and have every kept case fail on B; a case pytest collects beside
   them (an inherited or imported test class's) is refused in the RFC reward form only.

The file with the most kept cases wins (one file: its module-level code is kept whole, and two files'
helpers could collide). `find_human_oracle` returns it, or a `Drop` naming why none qualified, which the
oracle search records before falling back to the differential oracle, then the model's. Whether it
scores exactly 1.0 under the task's own verifier is checked at validation, as for any oracle.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import PurePosixPath

from repo2rlenv.baseline.junit import Outcome
from repo2rlenv.baseline.runner import SuiteRun
from repo2rlenv.pipelines.test_synthesis.candidates import Candidate, Drop
from repo2rlenv.pipelines.test_synthesis.options import TestSynthesisOptions
from repo2rlenv.pipelines.test_synthesis.oracle.human_cases import case_of, changed_cases, keep_only
from repo2rlenv.pipelines.test_synthesis.oracle.llm.check import static_check
from repo2rlenv.pipelines.test_synthesis.trials import Trials

# Reruns on each side before a case counts as fail-to-pass: a case that flips once is no oracle.
STABLE_RUNS = 3


class HumanSkip(StrEnum):
    """Why a change's own tests gave no oracle (recorded on the candidate, then the search falls back)."""

    no_cases = "human oracle: the change adds or edits no test case"
    static = "human oracle: the change's cases break the grader's static rules"
    none_stable = "human oracle: no case of the change fails on B and passes on A in every run"
    too_long = "human oracle: the kept cases exceed max_test_loc"
    too_few = "human oracle: fewer kept cases than min_new_tests"
    unconfirmed = "human oracle: the kept cases, run together, would not score 1.0"


@dataclass(frozen=True, slots=True)
class HumanOracle:
    """The accepted file, the cases it holds and the change's test file they come from."""

    source: str
    cases: tuple[str, ...]
    from_file: str


def _is_case_file(path: str) -> bool:
    name = PurePosixPath(path).name
    return name.endswith(".py") and name != "conftest.py"


def _stable(runs: list[SuiteRun], names: list[str], outcome: Outcome) -> set[str]:
    """Cases each of whose items had `outcome` in every run (a case with no item in some run is out)."""
    kept = set(names)
    for run in runs:
        seen: dict[str, bool] = {}
        for nodeid, result in run.results.items():
            case = case_of(nodeid)
            ok = result.outcome == outcome or (outcome == Outcome.failed and result.outcome == Outcome.error)
            seen[case] = seen.get(case, True) and ok
        kept &= {case for case, ok in seen.items() if ok and not run.timed_out}
    return kept


def _fail_to_pass(cand: Candidate, trials: Trials, draft: str, names: list[str], test_path: str) -> set[str]:
    passing = _stable([trials.run({test_path: draft}, [test_path]) for _ in range(STABLE_RUNS)], names, Outcome.passed)
    if not passing:
        return set()
    failing = _stable([trials.run({**cand.files_b, test_path: draft}, [test_path]) for _ in range(STABLE_RUNS)],
                      sorted(passing), Outcome.failed)
    return passing & failing


def _confirmed(cand: Candidate, trials: Trials, source: str, test_path: str, kept: set[str]) -> str | None:
    """Why the final file would not score 1.0 (None: it would): every case collected must pass on A and
    every kept case fail on B. pytest also collects a kept class's inherited cases and a test class the
    module imports (itsdangerous's timed tests inherit the signer's): they pass on A and B, which the
    gated reward accepts (some case catches B) and the RFC form, whose b_fail is the share of cases
    failing, does not."""
    on_a = trials.run({test_path: source}, [test_path])
    collected = {case_of(n) for n in on_a.results}
    if not kept <= collected:
        return "some kept cases were not collected"
    if on_a.timed_out or on_a.not_passed() or len(on_a.passed()) != len(on_a.results):
        return "not every case passes on A"
    extra = sorted(collected - kept)
    if extra and trials.reward_mode != "gated":
        return f"it also collects {', '.join(extra[:3])}, which cannot fail on B as the RFC reward needs"
    on_b = trials.run({**cand.files_b, test_path: source}, [test_path])
    failed = {case_of(n) for n in on_b.not_passed()}
    if on_b.timed_out or not kept <= failed or any(case_of(n) in kept for n in on_b.passed()):
        return "not every kept case fails on B"
    return None


def find_human_oracle(cand: Candidate, *, trials: Trials, test_path: str,
                      options: TestSynthesisOptions) -> HumanOracle | Drop:
    """The change's own fail-to-pass cases as the oracle file at `test_path`, or why there is none."""
    reasons: list[tuple[HumanSkip, str]] = []
    best: HumanOracle | None = None
    for path in sorted(p for p in cand.tests_change if _is_case_file(p)):
        text = cand.tests_change[path]
        names = changed_cases(cand.tests_a.get(path), text)
        if not names:
            continue
        draft = keep_only(text, set(names))
        # Size is judged on the final file: the cases that fail the runs are cut before it counts.
        problem = static_check(draft, test_path, max_test_loc=10 ** 9)
        if problem is not None:
            reasons.append((HumanSkip.static, f"{path}: {problem.verdict.value}: {problem.detail}"))
            continue
        kept = _fail_to_pass(cand, trials, draft, names, test_path)
        if not kept:
            reasons.append((HumanSkip.none_stable, f"{path}: {len(names)} case(s) tried"))
            continue
        source = keep_only(text, kept)
        problem = static_check(source, test_path, options.max_test_loc)
        if problem is not None:
            reasons.append((HumanSkip.too_long, f"{path}: {problem.detail}"))
            continue
        if len(kept) < options.min_new_tests:
            reasons.append((HumanSkip.too_few, f"{path}: {len(kept)} < {options.min_new_tests}"))
            continue
        problem_run = _confirmed(cand, trials, source, test_path, kept)
        if problem_run is not None:
            reasons.append((HumanSkip.unconfirmed, f"{path}: {problem_run}"))
            continue
        if best is None or len(kept) > len(best.cases):
            best = HumanOracle(source, tuple(sorted(kept)), path)
    if best is not None:
        return best
    if not reasons:
        return Drop(HumanSkip.no_cases.value, ", ".join(sorted(cand.tests_change)) or "no test file left in place")
    why, _ = reasons[0]
    # The first reason is the drop's; a further file's reason is spelled out beside its detail.
    return Drop(why.value, "; ".join(d if r is why else f"{r.value.removeprefix('human oracle: ')}: {d}"
                                     for r, d in reasons)[:500])

"""The reward: from the runs' outcomes to b_pass, b_fail, the mutation score, cov and the reward, by rules
a run cannot steer.

The runs: A itself (traced when the task measures coverage), its twins A′₁…A′ₖ, B's twins B′₁…B′ₘ and
each sibling mutant's twins (`verifier_twins`). The cases are the node ids pytest collected on A
(parametrized cases one by one); the tests are the test functions they belong to.

Rules, in order (the first that applies decides):
1. A must collect cleanly and finish; fewer test functions than `min_new_tests` → 0.
2. Every A′ run must collect exactly A's cases, finish, and give every case A's outcome. A case whose
   outcome differs between behaviour-identical variants depends on something other than the function's
   behaviour (its code's shape, entropy, timing): the submission scores 0, whatever its other cases do.
3. The good cases are those passing on A (hence on every A′); b_pass = good / cases.
4. Each B-side variant (B, each sibling) is judged over its runs, which must agree:
   - all clean (collected A's cases, finished, reported each): a good case kills the variant when it
     fails (or errors) in every run; a good case failing in some runs and not others → 0 (rule 2's
     reason, on the other side);
   - all broken (a collection error, a crash, a timeout, another set of cases): the variant counts as
     killed by exactly one case. A module-level check that breaks collection is one test, however many
     parametrized cases pad the file;
   - some clean, some broken → 0.
   kill(V) = killed good cases / good cases; V is *killed* when kill(V) > 0.
5. b_fail = kill(B) (the RFC's fraction of cases failing on B); nothing is paid unless B is killed.
6. The mutation score ms = siblings killed / siblings (1 with none).
7. cov: with `oracle_lines` (the function's lines the reference tests run on A), the share of them the
   submission runs on A; without, covered coverage targets / targets (1 with no targets).
8. gated (default): reward = b_pass · [B killed] · ((1 − μ) + μ · ms) · ((1 − w) + w · cov);
   rfc, the RFC's literal form: (1 − w) · b_pass · b_fail + w · cov_targets (siblings and
   oracle-relative coverage do not enter it).

Why gated pays [B killed] and not b_fail: with siblings, a thorough file has cases that catch other
changes than B; paying the fraction of cases failing on B would rank it below a file that only catches B.

Stdlib only: copied verbatim into every task.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

try:
    from . import verifier_results as vres
except ImportError:  # run as a script from /tests: the modules are plain siblings
    import verifier_results as vres  # type: ignore[no-redef]


@dataclass(slots=True)
class Runs:
    """The runs of one grading, by role."""

    a: vres.RunResult
    a_twins: list[vres.RunResult] = field(default_factory=list)
    b_twins: list[vres.RunResult] = field(default_factory=list)
    siblings: list[list[vres.RunResult]] = field(default_factory=list)

    def all(self) -> list[vres.RunResult]:
        return [self.a, *self.a_twins, *self.b_twins, *(r for s in self.siblings for r in s)]


@dataclass(frozen=True, slots=True)
class Terms:
    """What the reward arithmetic needs, after the rules."""

    mode: str
    weight: float
    min_new_tests: int
    targets: tuple[int, ...]
    mutation_weight: float = 0.5  # μ: the share of the discrimination term the siblings decide (gated)
    oracle_lines: tuple[int, ...] = ()  # the function's lines the reference tests run on A (gated's cov)


class Zero(Exception):
    """A rule makes the reward 0; the message is the reason. `integrity`: the runs disagree where
    behaviour cannot (rules 2 and 4): nothing is paid, not even the RFC form's coverage term."""

    def __init__(self, reason: str, *, integrity: bool = False):
        super().__init__(reason)
        self.integrity = integrity


def test_of(case: str) -> str:
    """The test function a case belongs to: its node id without the parametrization."""
    return case.split("[", 1)[0]


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _statuses(runs: list[vres.RunResult]) -> str:
    return ", ".join(f"{r.variant}: {r.status.value}" for r in runs if r.status != vres.Status.not_run)


def cases_of(a: vres.RunResult, min_new_tests: int) -> list[str]:
    """Rule 1: A's cases, or Zero."""
    if a.status == vres.Status.not_run:
        raise Zero("A was not run")
    if a.collect_errors:
        raise Zero(f"the test file does not collect on A ({a.collect_errors[0]})")
    if a.status != vres.Status.ok or a.collected is None:
        raise Zero(f"the run on A did not finish ({a.status.value})")
    cases = _unique(a.collected)
    if not cases:
        raise Zero("no test cases collected")
    tests = _unique([test_of(c) for c in cases])
    if len(tests) < max(1, min_new_tests):
        raise Zero(f"{len(tests)} test function(s), fewer than min_new_tests={min_new_tests}")
    missing = [c for c in cases if c not in a.cases]
    if missing:
        raise Zero(f"case {missing[0]} was collected on A but never reported")
    return cases


def check_a_side(a: vres.RunResult, twins: list[vres.RunResult], cases: list[str]) -> None:
    """Rule 2: every A′ behaves as A, case by case."""
    for twin in twins:
        if not twin.clean or set(twin.collected or []) != set(cases):
            raise Zero(f"the test file collects or runs differently on {twin.variant}, a behaviour-preserving "
                       f"rewrite of A ({twin.status.value})", integrity=True)
        for case in cases:
            if twin.outcome(case) != a.outcome(case):
                raise Zero(f"{case} {a.outcome(case).value} on A but {twin.outcome(case).value} on {twin.variant} "
                           f"(a rewrite of A that behaves the same): its outcome depends on more than behaviour",
                           integrity=True)


def kill_fraction(runs: list[vres.RunResult], good: list[str], cases: list[str], name: str) -> tuple[float, list[str]]:
    """Rule 4 for one B-side variant: (killed fraction of the good cases, the killers)."""
    clean = [r.clean and set(r.collected or []) == set(cases) for r in runs]
    if not any(clean):
        return min(1.0, 1.0 / len(good)), []
    if not all(clean):
        raise Zero(f"the runs of {name} disagree: {_statuses(runs)} (some collect and finish, some do not)",
                   integrity=True)
    killers = []
    for case in good:
        failing = {r.outcome(case) in vres.FAILING for r in runs}
        if len(failing) > 1:
            raise Zero(f"{case} fails on some rewrites of {name} and not on others: its outcome depends on more "
                       f"than behaviour", integrity=True)
        if failing == {True}:
            killers.append(case)
    return len(killers) / len(good), killers


def coverage_terms(runs: Runs, terms: Terms) -> tuple[float, float]:
    """(cov_targets, cov_oracle): rule 7's two coverage measures, on A's record."""
    covered = set(runs.a.covered or [])
    targets, reference = set(terms.targets), set(terms.oracle_lines)
    cov_targets = 1.0 if not targets else len(covered & targets) / len(targets)
    cov_oracle = cov_targets if not reference else len(covered & reference) / len(reference)
    return cov_targets, cov_oracle


def compute(runs: Runs, terms: Terms) -> dict[str, Any]:
    """The reward and its terms; `reason` is set when the reward is 0."""
    details: dict[str, Any] = {"reward": 0.0, "reason": None, "b_pass": None, "b_fail": None, "cov": None,
                               "mutation_score": None, "n_cases": 0, "n_tests": 0, "kills": {}}
    gated = terms.mode == "gated"
    cov_targets, cov_oracle = coverage_terms(runs, terms)
    cov = cov_oracle if gated else cov_targets
    if runs.a.status != vres.Status.not_run:
        details["cov"] = round(cov, 6)
    try:
        cases = cases_of(runs.a, terms.min_new_tests)
        details.update(n_cases=len(cases), n_tests=len(_unique([test_of(c) for c in cases])))
        good = [c for c in cases if runs.a.outcome(c) == vres.Outcome.passed]
        details["b_pass"] = round(len(good) / len(cases), 6)
        if not good:
            raise Zero("no case passes on A")
        check_a_side(runs.a, runs.a_twins, cases)
        kill_b, killers = kill_fraction(runs.b_twins, good, cases, "B")
        details["kills"]["B"] = killers
        killed = []
        for k, sibling in enumerate(runs.siblings, 1):
            fraction, sibling_killers = kill_fraction(sibling, good, cases, f"sibling {k}")
            details["kills"][f"sibling_{k}"] = sibling_killers
            killed.append(fraction > 0)
        details["b_fail"] = round(kill_b, 6)
        ms = sum(killed) / len(killed) if killed else 1.0
        details["mutation_score"] = round(ms, 6) if killed else None  # None: the task has no siblings
    except Zero as zero:
        details["reason"] = str(zero)
        if not gated and not zero.integrity and runs.a.status != vres.Status.not_run:
            details["reward"] = round(terms.weight * cov, 6)  # the RFC's formula pays coverage on its own
        return details
    b_pass, w, mu = details["b_pass"] or 0.0, terms.weight, terms.mutation_weight
    if gated:
        reward = b_pass * (kill_b > 0) * ((1 - mu) + mu * ms) * ((1 - w) + w * cov)
    else:
        reward = (1 - w) * b_pass * kill_b + w * cov
    details["reward"] = round(max(0.0, min(1.0, reward)), 6)
    if details["reward"] <= 0:
        details["reason"] = ("no case that passes on A and its rewrites fails on B" if kill_b == 0
                             else "none of the coverage targets is covered")
    return details

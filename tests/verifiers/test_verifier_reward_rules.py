"""The reward rules (verifier_reward) on synthetic run results: no test runs."""

from __future__ import annotations

import pytest

from repo2rlenv.verifiers.test_synthesis import verifier_reward as vr
from repo2rlenv.verifiers.test_synthesis.verifier_results import Outcome, RunResult, Status

P, F, E, S = Outcome.passed, Outcome.failed, Outcome.error, Outcome.skipped


def run(name: str, cases: dict[str, Outcome] | None = None, *, status: Status = Status.ok,
        collected: list[str] | None = None, covered: list[int] | None = None, errors: list[str] | None = None) -> RunResult:
    cases = dict(cases or {})
    return RunResult(name, status, cases=cases, collected=list(cases) if collected is None else collected,
                     covered=covered, collect_errors=list(errors or []))


def runs(a: dict, a_twins: list, b_twins: list, siblings: list | None = None, covered=(3, 4)) -> vr.Runs:
    def as_run(name, spec):
        return spec if isinstance(spec, RunResult) else run(name, spec)
    return vr.Runs(run("A", a, covered=list(covered)), [as_run(f"A′{i}", x) for i, x in enumerate(a_twins, 1)],
                   [as_run(f"B′{i}", x) for i, x in enumerate(b_twins, 1)],
                   [[as_run(f"S{i}′1", x)] for i, x in enumerate(siblings or [], 1)])


TERMS = vr.Terms("gated", 0.5, 1, (3, 4))
CRASHED = RunResult("x", Status.crashed)


# gated, w = 0.5, μ = 0.5, no coverage targets nor oracle lines (cov = 1).
@pytest.mark.parametrize(("label", "a", "a_twins", "b_twins", "siblings", "expected"), [
    ("one discriminating case", {"t": P}, [{"t": P}] * 2, [{"t": F}] * 2, None, 1.0),
    ("an error on B kills too", {"t": P}, [{"t": P}] * 2, [{"t": E}] * 2, None, 1.0),
    ("a skip on B does not", {"t": P}, [{"t": P}] * 2, [{"t": S}] * 2, None, 0.0),
    ("a case that does not kill B costs nothing", {"t": P, "u": P}, [{"t": P, "u": P}] * 2,
     [{"t": F, "u": P}] * 2, None, 1.0),
    ("a case failing everywhere only costs b_pass", {"t": P, "u": F}, [{"t": P, "u": F}] * 2,
     [{"t": F, "u": F}] * 2, None, 0.5),
    ("B killed, its sibling not: 1 − μ", {"t": P}, [{"t": P}], [{"t": F}], [{"t": P}], 0.5),
    ("B and one sibling of two", {"t": P, "u": P}, [{"t": P, "u": P}], [{"t": F, "u": P}],
     [{"t": P, "u": F}, {"t": P, "u": P}], 0.75),
    ("B and every sibling, by different cases", {"t": P, "u": P}, [{"t": P, "u": P}], [{"t": F, "u": P}],
     [{"t": P, "u": F}, {"t": F, "u": P}], 1.0),
    ("siblings alone earn nothing", {"t": P}, [{"t": P}], [{"t": P}], [{"t": F}, {"t": F}], 0.0),
    ("B broken in every run: killed", {"t": P, "u": P}, [{"t": P, "u": P}], [CRASHED, CRASHED], None, 1.0),
])
def test_reward_table(label, a, a_twins, b_twins, siblings, expected):
    out = vr.compute(runs(a, a_twins, b_twins, siblings), vr.Terms("gated", 0.5, 1, ()))
    assert out["reward"] == pytest.approx(expected), (label, out["reason"])


def test_a_thorough_file_outranks_one_that_only_catches_b():
    """The reason gated pays [B killed], not the fraction of cases failing on B (the RFC's b_fail)."""
    only_b = runs({"t": P}, [{"t": P}], [{"t": F}], [{"t": P}] * 3)
    thorough = runs({"t": P, "u": P, "v": P}, [{"t": P, "u": P, "v": P}], [{"t": F, "u": P, "v": P}],
                    [{"t": P, "u": F, "v": P}, {"t": P, "u": P, "v": F}, {"t": P, "u": F, "v": F}])
    terms = vr.Terms("gated", 0.5, 1, ())
    low, high = vr.compute(only_b, terms), vr.compute(thorough, terms)
    assert (low["mutation_score"], high["mutation_score"]) == (0.0, 1.0)
    assert (low["reward"], high["reward"]) == (0.5, 1.0)
    assert high["b_fail"] == pytest.approx(1 / 3)  # still reported, as the RFC defines it
    rfc = vr.Terms("rfc", 0.5, 1, ())
    assert vr.compute(thorough, rfc)["reward"] == pytest.approx(0.5 / 3 + 0.5)  # siblings do not enter rfc


@pytest.mark.parametrize(("mu", "expected"), [(0.0, 1.0), (0.25, 0.875), (1.0, 0.5)])
def test_mutation_weight_sets_the_siblings_share(mu, expected):
    half = runs({"t": P}, [{"t": P}], [{"t": F}], [{"t": F}, {"t": P}])
    assert vr.compute(half, vr.Terms("gated", 0.5, 1, (), mu))["reward"] == pytest.approx(expected)


def test_gated_coverage_is_relative_to_the_oracles_lines():
    # The suite runs every line (no targets): the submission's own share of the oracle's lines counts.
    partial = runs({"t": P}, [{"t": P}], [{"t": F}], covered=(2, 3, 9))
    out = vr.compute(partial, vr.Terms("gated", 0.5, 1, (), 0.5, (2, 3, 4, 5)))
    assert (out["cov"], out["reward"]) == (0.5, 0.75)
    full = runs({"t": P}, [{"t": P}], [{"t": F}], covered=(2, 3, 4, 5))
    assert vr.compute(full, vr.Terms("gated", 0.5, 1, (), 0.5, (2, 3, 4, 5)))["reward"] == 1.0
    # rfc keeps the RFC's coverage gain over the targets, whatever the oracle's lines.
    rfc = vr.compute(partial, vr.Terms("rfc", 0.5, 1, (3, 4), 0.5, (2, 3, 4, 5)))
    assert (rfc["cov"], rfc["reward"]) == (0.5, 0.75)


@pytest.mark.parametrize(("label", "a", "a_twins", "b_twins", "reason"), [
    ("an outcome that differs on a rewrite of A", {"t": P, "u": P}, [{"t": P, "u": P}, {"t": P, "u": F}],
     [{"t": F, "u": F}] * 2, "u passed on A but failed on A′2"),
    ("a failing case that passes on a rewrite of A", {"t": P, "u": F}, [{"t": P, "u": P}], [{"t": F, "u": F}],
     "u failed on A but passed on A′1"),
    ("a rewrite of A that collects other cases", {"t": P}, [{"t": P, "x": P}], [{"t": F}], "collects or runs differently"),
    ("a rewrite of A that crashes", {"t": P}, [CRASHED], [{"t": F}], "collects or runs differently"),
    ("B's rewrites disagree on a case", {"t": P}, [{"t": P}], [{"t": F}, {"t": P}], "fails on some rewrites of B"),
    ("some B runs collect, some do not", {"t": P}, [{"t": P}], [{"t": F}, CRASHED], "the runs of B disagree"),
])
def test_inconsistency_between_behaviour_identical_runs_pays_nothing_even_in_rfc(label, a, a_twins, b_twins, reason):
    for mode in ("gated", "rfc"):
        out = vr.compute(runs(a, a_twins, b_twins), vr.Terms(mode, 0.5, 1, (3, 4)))
        assert out["reward"] == 0.0, (label, mode)
        assert reason in out["reason"], (label, out["reason"])


def test_a_coin_flip_case_pays_only_when_every_run_lines_up():
    # p⁵(1−p)⁴ in expectation over coin cases: here the one line-up that pays, and one that does not.
    lucky = runs({"t": P}, [{"t": P}] * 4, [{"t": F}] * 4)
    assert vr.compute(lucky, vr.Terms("gated", 0.5, 1, ()))["reward"] == 1.0
    unlucky = runs({"t": P}, [{"t": P}] * 3 + [{"t": F}], [{"t": F}] * 4)
    assert vr.compute(unlucky, vr.Terms("gated", 0.5, 1, ()))["reward"] == 0.0


def test_collection_error_on_b_is_one_case_not_all():
    a = {f"t[{i}]": P for i in range(50)}
    broken_b = runs(a, [a], [run("B′1", status=Status.ok, collected=[], errors=["tests/t.py"])])
    out = vr.compute(broken_b, vr.Terms("gated", 0.5, 1, ()))
    assert out["b_fail"] == pytest.approx(1 / 50) and out["reward"] == 1.0  # B is killed, by one check
    assert out["n_tests"] == 1 and out["n_cases"] == 50
    assert vr.compute(broken_b, vr.Terms("rfc", 0.5, 1, ()))["reward"] == pytest.approx(0.5 / 50 + 0.5)


def test_min_new_tests_counts_test_functions_not_parametrized_cases():
    a = {f"t[{i}]": P for i in range(5)}
    out = vr.compute(runs(a, [a], [{c: F for c in a}]), vr.Terms("gated", 0.5, 2, ()))
    assert out["reward"] == 0.0 and out["reason"] == "1 test function(s), fewer than min_new_tests=2"
    two = {"t[0]": P, "u": P}
    assert vr.compute(runs(two, [two], [{"t[0]": F, "u": F}]), vr.Terms("gated", 0.5, 2, ()))["reward"] == 1.0


def test_coverage_term_modes_and_weight():
    both = runs({"t": P}, [{"t": P}], [{"t": F}], covered=(1, 3))
    out = vr.compute(both, TERMS)
    assert (out["cov"], out["reward"]) == (0.5, 0.75)
    assert vr.compute(both, vr.Terms("gated", 1.0, 1, (3, 4)))["reward"] == 0.5
    assert vr.compute(both, vr.Terms("rfc", 0.5, 1, (3, 4)))["reward"] == 0.75
    passes_on_b = runs({"t": P}, [{"t": P}], [{"t": P}], covered=(3, 4))
    assert vr.compute(passes_on_b, TERMS)["reward"] == 0.0
    assert vr.compute(passes_on_b, vr.Terms("rfc", 0.5, 1, (3, 4)))["reward"] == 0.5  # the RFC's own weakness


@pytest.mark.parametrize(("a", "reason"), [
    (run("A", {}), "no test cases collected"),
    (run("A", {"t": F}), "no case passes on A"),
    (run("A", status=Status.crashed, collected=None), "did not finish"),
    (run("A", {"t": P}, errors=["tests/t.py"]), "does not collect on A"),
    (run("A", {}, collected=["t"]), "never reported"),
])
def test_zero_rewards_always_carry_a_reason(a, reason):
    out = vr.compute(vr.Runs(a, [], []), TERMS)
    assert out["reward"] == 0.0 and reason in out["reason"]


def test_test_of_strips_the_parametrization():
    assert vr.test_of("tests/t.py::TestX::test_a[1-x[y]]") == "tests/t.py::TestX::test_a"

"""A stage's share of a slow suite's covering tests (test_share.py): the fastest up to the budget, in the
suite's order; nothing cut when they fit."""

from __future__ import annotations

from repo2rlenv.pipelines.test_synthesis.test_share import fastest_tests

DURATIONS = {"t::slow_server": 9.0, "t::unit_a": 0.01, "t::medium": 4.0, "t::unit_b": 0.02, "t::slower": 12.0}
COVERING = ["t::slow_server", "t::unit_a", "t::medium", "t::unit_b", "t::slower"]


def test_covering_tests_that_fit_the_budget_all_run_in_their_order():
    got = fastest_tests(COVERING, DURATIONS, 60.0)
    assert got.tests == COVERING and not got.cut and got.seconds == got.of_seconds


def test_over_the_budget_the_fastest_run_in_the_suites_order():
    got = fastest_tests(COVERING, DURATIONS, 10.0)
    assert got.tests == ["t::unit_a", "t::medium", "t::unit_b"]  # 4.03 s; the 9 s test would pass 10 s
    assert got.cut and got.of == 5 and round(got.seconds, 2) == 4.03 and round(got.of_seconds, 2) == 25.03
    assert got.detail("the harvest", "harvest_budget_sec", 10.0).startswith(
        "the harvest ran the 3 fastest of 5 covering tests (4.0s of 25.0s baseline time; harvest_budget_sec=10)")


def test_one_test_runs_even_when_it_alone_is_over_the_budget():
    assert fastest_tests(["t::slow_server", "t::slower"], DURATIONS, 1.0).tests == ["t::slow_server"]


def test_a_budget_of_zero_runs_them_all_and_an_unknown_test_counts_as_the_median():
    assert fastest_tests(COVERING, DURATIONS, 0).tests == COVERING
    # "t::new" costs the median of the known (0.01, 4.0, 12.0): 4.0, so it does not fit next to t::medium;
    # counted as free it would.
    got = fastest_tests(["t::unit_a", "t::medium", "t::new", "t::slower"], DURATIONS, 5.0)
    assert got.tests == ["t::unit_a", "t::medium"] and round(got.of_seconds, 2) == 20.01

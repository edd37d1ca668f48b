"""budget.py: the run's clock, expected stage costs learned from what the run measured, one candidate's
share, and the one line that says where a run's time went."""

from __future__ import annotations

import time

from repo2rlenv.pipelines.test_synthesis.budget import (
    OVER_SHARE,
    CandidateTimer,
    Clock,
    Deferred,
    SlowItem,
    StageCosts,
    TimeReport,
    slowest,
)


def test_a_clock_without_budget_never_passes_and_one_with_a_spent_budget_does():
    assert Clock(0).left() == float("inf") and not Clock(0).passed()
    spent = Clock(1, now=time.monotonic() - 61)
    assert spent.passed() and not spent.affords(0.5)
    fresh = Clock(1)
    assert fresh.affords(30) and not fresh.affords(120)


def test_costs_start_from_the_baseline_and_follow_the_largest_recent_measurement_but_one_outlier():
    costs = StageCosts(suite_sec=42.0)
    assert costs.expect("whole suite on B") == 42.0  # a suite stage is priced as the baseline was
    assert costs.expect("publish") == 60.0  # the first guess
    costs.record("publish", 3.0)
    costs.record("publish", 9.0)
    assert costs.expect("publish") == 9.0  # two measurements: the largest
    costs.record("publish", 138.0)
    assert costs.expect("publish") == 9.0  # one slow publish alone does not price every later one
    costs.record("publish", 120.0)
    assert costs.expect("publish") == 120.0  # two do: slow is the norm now
    for took in (1.0,) * 5:
        costs.record("publish", took)
    assert costs.expect("publish") == 1.0  # only the last five count: early slow ones are forgotten


def test_a_candidate_is_deferred_when_the_time_left_cannot_afford_its_next_stage():
    costs = StageCosts(suite_sec=300.0)
    timer = CandidateTimer(Clock(1), costs, share_sec=0)
    assert timer.before("oracle") is None  # 30 s of 60
    late = timer.before("whole suite on B")
    assert isinstance(late, Deferred) and late.stage == "whole suite on B"
    assert "expected to take 300s" in late.detail


def test_a_candidate_over_its_share_is_told_apart_from_one_the_run_cannot_afford():
    timer = CandidateTimer(Clock(0), StageCosts(1.0), share_sec=0.01)
    with timer.stage("oracle"):
        time.sleep(0.03)
    late = timer.before("twins")
    assert isinstance(late, Deferred) and late.stage == OVER_SHARE
    assert timer.seconds["oracle"] >= 0.03 and timer.costs.expect("oracle") >= 0.03


def test_the_time_line_names_the_costliest_stages_and_the_slowest_test():
    report = TimeReport(budget_min=18, elapsed_sec=1080, stages_sec={"baseline": 600, "gates": 300, "mining": 5,
                                                                    "environment": 120},
                        slowest_tests=slowest({"t::a": 1.0, "t::b": 30.0, "t::c": 2.0}, 2),
                        slowest_candidates=[SlowItem(name="f add_one", seconds=40)])
    assert [t.name for t in report.slowest_tests] == ["t::b", "t::c"]
    assert report.line() == "18.0 min: baseline 10.0 min, gates 5.0 min, environment 2.0 min; slowest test t::b 30.0s"

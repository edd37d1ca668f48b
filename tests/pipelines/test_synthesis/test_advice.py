"""A run that emits fewer tasks than asked names the funnel's dominant drop reason and what to try."""

from __future__ import annotations

from collections import Counter

import pytest

from repo2rlenv.pipelines.test_synthesis.advice import ADVICE, advise
from repo2rlenv.pipelines.test_synthesis.candidates import SkipReason


def test_enough_tasks_no_advice():
    assert advise(Counter({SkipReason.killed.value: 40}), emitted=3, wanted=3) is None


def test_suite_kills_every_mutant():
    funnel = Counter({SkipReason.killed.value: 61, SkipReason.no_oracle.value: 2,
                      "function: module not imported by the suite": 90, SkipReason.over_limit.value: 500})
    advice = advise(funnel, emitted=0, wanted=3, candidates=70)
    assert advice is not None and advice.reason == SkipReason.killed.value and advice.count == 61
    assert "the suite kills every mutant" in advice.line and "strategy=commit_pair" in advice.line
    assert advice.line.startswith("emitted 0 of 3:")


def test_no_oracle_points_at_an_llm():
    advice = advise({SkipReason.no_oracle.value: 5, SkipReason.killed.value: 1}, emitted=1, wanted=3, candidates=9)
    assert advice is not None and "--llm" in advice.try_


def test_no_candidates_reads_the_miners_reasons():
    funnel = {"function: module not imported by the suite": 12, "function: too_short": 30, "function: test_code": 40}
    advice = advise(funnel, emitted=0, wanted=3, candidates=0)
    assert advice is not None and "no function is covered by the suite" in advice.line
    assert "(function: module not imported by the suite: 12)" in advice.line


def test_unknown_reasons_fall_back():
    assert advise({"something new": 4}, emitted=0, wanted=3, candidates=4).meaning == "candidates were dropped"
    assert "no function qualified" in advise({"function: odd": 2}, emitted=0, wanted=1, candidates=0).meaning
    assert advise({}, emitted=0, wanted=3, candidates=0).reason == "no candidates"


def test_every_skip_reason_that_drops_has_advice():
    for reason in SkipReason:
        if reason is not SkipReason.over_limit:
            assert reason.value in ADVICE, reason


def test_every_no_oracle_reason_has_advice():
    from repo2rlenv.pipelines.test_synthesis.oracle.differential.differential import NoOracle

    for reason in NoOracle:
        assert reason.value in ADVICE, reason


def test_survivors_enough_for_the_goal_point_past_the_gates():
    # mdurl: most mutants killed, but 148 survived and were lost for want of an oracle: that is the bottleneck.
    funnel = {SkipReason.killed.value: 237, SkipReason.no_oracle.value: 148, SkipReason.timeout_on_b.value: 13}
    advice = advise(funnel, emitted=0, wanted=3, candidates=398)
    assert advice is not None and advice.reason == SkipReason.no_oracle.value and advice.count == 148
    assert "--llm" in advice.try_
    # Fewer survivors lost than the goal: the gates are the bottleneck (test_suite_kills_every_mutant).
    assert advise({**funnel, SkipReason.no_oracle.value: 2}, emitted=0, wanted=3, candidates=252).reason \
        == SkipReason.killed.value


@pytest.mark.parametrize("strategy", ["commit_pair", "mutation", "hybrid", None])
def test_advice_never_suggests_the_strategy_in_use(strategy):
    funnel = {SkipReason.killed.value: 40}
    advice = advise(funnel, emitted=0, wanted=3, candidates=40, strategy=strategy)
    assert "another strategy:" in advice.try_
    named = {s for s in ("commit_pair", "mutation", "hybrid") if f"strategy={s}" in advice.line}
    assert named == {"commit_pair", "mutation", "hybrid"} - {strategy}
    assert "{strategies}" not in advice.line

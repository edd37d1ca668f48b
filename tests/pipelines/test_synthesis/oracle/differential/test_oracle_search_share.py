"""The search's time share (`Limits.search_sec`, option `oracle_search_sec`): past it the replays stop, the
diagnosis says the search was cut, and the miss is classed as such, not as "no input tells A from B"."""

from __future__ import annotations

from repo2rlenv.pipelines.test_synthesis.oracle.differential import NoOracle, synthesize_differential
from repo2rlenv.pipelines.test_synthesis.oracle.differential.differential import Limits
from repo2rlenv.pipelines.test_synthesis.oracle.differential.misses import MissClass, classify_miss

CALC = "slowlib/calc.py"
LIB = {
    "slowlib/__init__.py": "",
    CALC: '''
        import time


        def scaled(x: int) -> int:
            time.sleep(0.02)
            if x > 1000:
                return x * 3
            return x * 2
    ''',
    "tests/test_calc.py": '''
        from slowlib.calc import scaled


        def test_scaled():
            assert scaled(2) == 4
    ''',
    # Ten slow tests, each with its own call: a harvest that ran them all would record ten.
    "tests/test_slow.py": '''
        import time

        import pytest

        from slowlib.calc import scaled


        @pytest.mark.parametrize("x", range(10))
        def test_scaled_slowly(x):
            time.sleep(0.4)
            assert scaled(x) == 2 * x
    ''',
}


def _search(make_pair, runner_for, limits: Limits, covering: tuple[str, ...] = ("tests/test_calc.py::test_scaled",)):
    pair = make_pair(LIB, CALC, "if x > 1000:", "if x >= 1000:")
    return synthesize_differential(
        runner=runner_for(pair), target_file=CALC, module="slowlib.calc", qualname="scaled",
        function_source_a=(pair[0] / CALC).read_text(), covering_tests=list(covering),
        test_path="tests/test_r2e_oracle.py", limits=limits)


def test_a_spent_share_stops_the_search_and_says_so(make_pair, runner_for):
    # The recorded call (scaled(2)) does not tell the boundary apart; the perturbed calls would, but the share
    # is spent by the harvest, so only the recorded call, which the harvest paid for, is replayed.
    result = _search(make_pair, runner_for, Limits(search_sec=0.01))
    assert not result.found and result.reason == NoOracle.NO_DISTINGUISHING_INPUT
    assert result.diagnosis.cut and result.harvested == 1 and result.tried == 1
    assert classify_miss(result.reason, result.detail)[0] is MissClass.CUT


def test_without_a_share_the_same_search_finds_the_boundary(make_pair, runner_for):
    result = _search(make_pair, runner_for, Limits(search_sec=0))
    assert result.found and not result.diagnosis.cut
    assert "scaled(1000)" in (result.test_source or "") or "scaled(1001)" in (result.test_source or "")


def test_a_slow_harvest_stops_at_its_part_of_the_share_with_the_calls_it_recorded(make_pair, runner_for):
    # A share of 3 s gives the harvest 1.5 s of tests: about four of the ten slow ones, whose calls are kept.
    slow = tuple(f"tests/test_slow.py::test_scaled_slowly[{x}]" for x in range(10))
    result = _search(make_pair, runner_for, Limits(search_sec=3.0), slow)
    assert result.diagnosis.cut
    assert 1 <= result.harvested < 10

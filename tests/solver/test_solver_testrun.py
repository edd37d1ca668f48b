"""When a run of the agent's tests counts as done (`TestReport.succeeded`): the loop stops there as solved."""

from __future__ import annotations

from repo2rlenv.solver.testrun import CaseOutcome, Outcome, TestReport


def _report(covered: list[int], baseline: list[int]) -> TestReport:
    return TestReport(test_paths=["tests/test_x.py"], ran=True, cases=[CaseOutcome(nodeid="t::a", outcome=Outcome.passed)],
                      function_lines=[3, 4, 5], baseline_covered=baseline, covered=covered)


def test_passing_tests_that_never_run_the_function_are_not_a_success_even_with_nothing_left_to_cover():
    # The existing suite runs every line: there is no coverage to add, but a test must still call it.
    assert not _report(covered=[], baseline=[3, 4, 5]).succeeded()
    assert _report(covered=[3], baseline=[3, 4, 5]).succeeded()


def test_passing_tests_must_add_coverage_when_there_is_some_to_add():
    assert not _report(covered=[3], baseline=[3]).succeeded()
    assert _report(covered=[3, 4], baseline=[3]).succeeded()

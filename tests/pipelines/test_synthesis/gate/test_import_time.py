"""A function that runs only while the package is imported (a rule table built at module level, a class
factory in a class statement) is no candidate: per-test coverage gives it no test, so no gate and no oracle
can come from the suite (issue 34: a word-inflection library's 103 surviving mutants of such builders)."""

from __future__ import annotations

from repo2rlenv.baseline.coverage_map import CoverageMap, FileCoverage
from repo2rlenv.baseline.runner import BaselineReport
from repo2rlenv.pipelines.test_synthesis.candidates import Candidate, SkipReason
from repo2rlenv.pipelines.test_synthesis.gate.gates import prepare_candidate
from repo2rlenv.pysource.functions import FunctionRecord

PATH = "words/rules.py"


def _func(name: str, lineno: int, end: int) -> FunctionRecord:
    return FunctionRecord(path=PATH, module="words.rules", qualname=name, name=name, class_name=None, lineno=lineno,
                          end_lineno=end, body_lines=list(range(lineno + 1, end + 1)), signature=f"def {name}(x)",
                          docstring=None, is_async=False, decorators=[], loc=end - lineno)


def _baseline() -> BaselineReport:
    # Lines 2-3 (build_rules) ran at import only: executed, in no test's context. Lines 6-7 (plural) ran in a
    # test. Lines 10-11 (unused) never ran.
    coverage = CoverageMap(tests=["tests/test_rules.py::test_plural"], files={PATH: FileCoverage(
        executable=[2, 3, 6, 7, 10, 11], executed=[2, 3, 6, 7], contexts={6: [0], 7: [0]})})
    return BaselineReport(total=1, stable_passing=["tests/test_rules.py::test_plural"], quarantined={},
                          coverage=coverage, duration_sec=0.1)


def _prepared(func: FunctionRecord) -> tuple[bool, Candidate]:
    cand = Candidate(candidate_id="c", strategy="mutation", function=func, operator="hand", line=func.lineno + 1,
                     files_b={PATH: "x = 1\n"}, diff="")
    return prepare_candidate(cand, _baseline(), {"tests/test_rules.py::test_plural"}), cand


def test_a_function_run_only_at_import_time_is_dropped_with_its_reason():
    kept, cand = _prepared(_func("build_rules", 1, 3))
    assert not kept and cand.skip_reason == SkipReason.import_time.value
    assert "imported" in next(g.detail for g in cand.gates if g.gate == SkipReason.import_time.value)


def test_functions_a_test_runs_or_nothing_runs_stay_candidates():
    kept, cand = _prepared(_func("plural", 5, 7))
    assert kept and cand.covering_tests == ["tests/test_rules.py::test_plural"]
    kept, cand = _prepared(_func("unused", 9, 11))  # a test gap: the oracle may still generate inputs for it
    assert kept and cand.covering_tests == []

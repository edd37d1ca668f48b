"""The baseline for real: JUnit outcomes by node id, per-test coverage, quarantine, clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from repo2rlenv.baseline.junit import Outcome, parse_junit
from repo2rlenv.baseline.runner import SuiteRunner, run_baseline
from repo2rlenv.errors import BaselineError
from repo2rlenv.sandbox.base import Limits

SOURCE = (
    "def clamp(x, lo, hi):\n"
    "    if x < lo:\n"
    "        return lo\n"
    "    if x > hi:\n"
    "        return hi\n"
    "    return x\n"
    "\n"
    "class Box:\n"
    "    def area(self, w, h):\n"
    "        return w * h\n"
)
TESTS = (
    "import os, pytest\n"
    "from tinypkg.core import clamp, Box\n\n"
    "def test_low():\n    assert clamp(-1, 0, 5) == 0\n\n"
    "@pytest.mark.parametrize('x', [1, 2])\n"
    "def test_mid(x):\n    assert clamp(x, 0, 5) == x\n\n"
    "class AreaMixin:\n"
    "    def test_area(self):\n        assert Box().area(2, 3) == 6\n\n"
    "class TestArea(AreaMixin):\n    pass\n\n"
    "def test_broken():\n    assert clamp(9, 0, 5) == 9\n\n"
    "def test_flaky(tmp_path_factory):\n"
    "    marker = os.path.join(os.path.dirname(__file__), '.flaky-marker')\n"
    "    if os.path.exists(marker):\n        assert False, 'second run'\n"
    "    open(marker, 'w').close()\n\n"
    "@pytest.mark.skip(reason='not today')\n"
    "def test_skipped():\n    pass\n"
)


def _sandbox(kind: str, request, tmp_path: Path):
    return request.getfixturevalue("make_sandbox")(kind, Limits(timeout_sec=120), "baseline-test", request.getfixturevalue("r2e_cache"))


@pytest.mark.parametrize("kind", ["docker", "local"])
def test_baseline_outcomes_coverage_and_quarantine(kind, request, tmp_path, make_repo, tiny_package):
    root = make_repo(tiny_package(TESTS, SOURCE), commit=False)
    sandbox = _sandbox(kind, request, tmp_path)
    sandbox.prepare(root)
    with sandbox.open() as session:
        runner = SuiteRunner(session, sandbox.plan.import_roots)
        report = run_baseline(runner, reruns=1, timeout=120)
    assert report.total == 7
    assert set(report.stable_passing) == {
        "tests/test_core.py::test_low", "tests/test_core.py::test_mid[1]", "tests/test_core.py::test_mid[2]",
        "tests/test_core.py::TestArea::test_area"}
    assert report.quarantined["tests/test_core.py::test_broken"].startswith("fails at the ref")
    assert report.quarantined["tests/test_core.py::test_flaky"].startswith("flaky")
    assert report.skipped == ["tests/test_core.py::test_skipped"]
    cov = report.coverage
    # Per-test contexts are exact node ids, including the mixin-inherited test.
    assert cov.tests_covering("tinypkg/core.py", [3]) == {"tests/test_core.py::test_low"}
    assert cov.tests_covering("tinypkg/core.py", [10]) == {"tests/test_core.py::TestArea::test_area"}
    assert "tests/test_core.py::test_mid[2]" in cov.tests_covering("tinypkg/core.py", [6])
    # Line 5 (return hi) is executed only by the failing test.
    assert cov.tests_covering("tinypkg/core.py", [5]) == {"tests/test_core.py::test_broken"}


@pytest.mark.parametrize(
    ("tests", "message"),
    [("", "has no tests pytest can collect"),
     ("def test_a():\n    assert False\n", "no test passes at the ref")],
)
def test_baseline_errors(tests, message, request, tmp_path, make_repo, tiny_package):
    files = tiny_package(tests)
    if not tests:
        files.pop("tests/test_core.py")
    root = make_repo(files, commit=False)
    sandbox = _sandbox("local", request, tmp_path)
    sandbox.prepare(root)
    with sandbox.open() as session:
        with pytest.raises(BaselineError, match=message) as caught:
            run_baseline(SuiteRunner(session, sandbox.plan.import_roots), reruns=0, timeout=60)
    if tests:  # pytest's own output goes with the error, for the log file
        assert "assert False" in caught.value.output


def test_junit_parse_fallbacks_and_outcomes():
    xml = (
        '<testsuites><testsuite>'
        '<testcase classname="tests.test_a" name="test_ok" time="0.1"><properties>'
        '<property name="r2e_nodeid" value="tests/test_a.py::test_ok"/></properties></testcase>'
        '<testcase classname="tests.test_a" name="test_bad"><failure message="assert 1 == 2">x</failure></testcase>'
        '<testcase classname="" name="tests.test_b"><error message="collection failure">E</error></testcase>'
        '<testcase classname="tests.test_a" name="test_s"><skipped message="nope"/></testcase>'
        '</testsuite></testsuites>'
    )
    res = parse_junit(xml)
    assert res["tests/test_a.py::test_ok"].outcome == Outcome.passed
    assert res["tests/test_a.py::test_ok"].duration_sec == pytest.approx(0.1)
    assert res["tests/test_a::test_bad"].outcome == Outcome.failed
    assert res["tests/test_a::test_bad"].message == "assert 1 == 2"
    assert res["tests.test_b"].outcome == Outcome.error
    assert res["tests/test_a::test_s"].outcome == Outcome.skipped
    with pytest.raises(ValueError, match="malformed"):
        parse_junit("<testsuites>")


def _local_baseline(files, request, tmp_path, make_repo):
    """(runner, the baseline, one more whole-suite run) of `files` in the local sandbox."""
    sandbox = _sandbox("local", request, tmp_path)
    sandbox.prepare(make_repo(files, commit=False))
    with sandbox.open() as session:
        runner = SuiteRunner(session, sandbox.plan.import_roots)
        report = run_baseline(runner, reruns=1, timeout=120)
        return runner, report, runner.run(timeout=120)


def test_a_unittest_suite_in_a_root_tests_py_is_collected(request, tmp_path, make_repo, tiny_package):
    # python-nameparser keeps its whole suite in ./tests.py, which pytest's default python_files skips.
    files = tiny_package("", SOURCE)
    del files["tests/test_core.py"]
    files["tests.py"] = ("import unittest\nfrom tinypkg.core import clamp\n\n\n"
                         "class ClampTests(unittest.TestCase):\n"
                         "    def test_low(self):\n        self.assertEqual(clamp(-1, 0, 5), 0)\n")
    runner, report, _ = _local_baseline(files, request, tmp_path, make_repo)
    assert report.stable_passing == ["tests.py::ClampTests::test_low"]
    assert runner.pytest_setup.ini_overrides["python_files"] == "test_*.py *_test.py tests.py"


def test_a_slow_test_file_is_set_aside_and_left_out_of_every_later_run(request, tmp_path, make_repo, tiny_package,
                                                                      monkeypatch):
    import repo2rlenv.baseline.runner as runner_module

    # pydash runs mypy once per case in tests/pytest_mypy_testing: the suite never finished in 900 s.
    monkeypatch.setattr(runner_module, "SLOW_FILE_RULE", (0.3, 2))
    files = tiny_package("from tinypkg.core import clamp\n\ndef test_low():\n    assert clamp(-1, 0, 5) == 0\n", SOURCE)
    files["tests/test_slow.py"] = ("import time\n\n" + "".join(
        f"def test_slow_{i}():\n    time.sleep(0.35)\n\n" for i in range(6)))
    _, report, again = _local_baseline(files, request, tmp_path, make_repo)
    assert list(report.set_aside) == ["tests/test_slow.py"] and "a test over its first 2" in report.set_aside[
        "tests/test_slow.py"]
    assert report.stable_passing == ["tests/test_core.py::test_low"] and report.total == 1
    assert list(again.results) == ["tests/test_core.py::test_low"]  # the file is not collected again


def test_deselect_leaves_out_exactly_the_ids_given_not_those_they_prefix(local_repo_session):
    # pytest's --deselect matches node id prefixes: construct's quarantined `test_numpy` took the stable
    # `test_numpy_error` with it, and every candidate with an oracle was dropped as noticed on B.
    files = {"pyproject.toml": '[project]\nname = "tinypkg"\nversion = "0.0.1"\n',
             "tinypkg/__init__.py": "",
             "tests/test_t.py": ("import pytest\n\ndef test_numpy():\n    pass\n\ndef test_numpy_error():\n    pass\n\n"
                                 "@pytest.mark.parametrize('n', [1, 10])\ndef test_x(n):\n    pass\n")}
    with local_repo_session(files, "deselect") as (_root, sandbox, session):
        run = SuiteRunner(session, sandbox.plan.import_roots).run(
            timeout=120, deselect=["tests/test_t.py::test_numpy", "tests/test_t.py::test_x[1]"])
    assert sorted(run.results) == ["tests/test_t.py::test_numpy_error", "tests/test_t.py::test_x[10]"]

"""Outcomes from our plugin's report hook: real pytest on a tiny suite with every kind of failure pytest
can report, read back by `parse_outcomes`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from repo2rlenv.baseline.junit import Outcome
from repo2rlenv.baseline.outcomes import parse_outcomes

PLUGIN_DIR = Path(__file__).resolve().parents[2] / "repo2rlenv" / "baseline" / "r2e_plugin"
SUITE = '''\
import unittest, warnings

import pytest


class TestSub(unittest.TestCase):
    def test_sub(self):
        for i in range(3):
            with self.subTest(i=i):
                self.assertLess(i, 1)


def test_pysub(subtests):
    for i in range(3):
        with subtests.test(i=i):
            if i == 1:
                pytest.skip("a skipped subtest skips nothing else")
            assert True


def test_pysub_fails(subtests):
    with subtests.test():
        assert False


@pytest.mark.xfail(strict=True)
def test_xpass_strict():
    pass


@pytest.mark.xfail(strict=True)
def test_xfailed():
    assert False


@pytest.fixture
def broken_setup():
    raise RuntimeError("setup")


def test_setup(broken_setup):
    pass


@pytest.fixture
def broken_teardown():
    yield
    raise RuntimeError("teardown")


def test_teardown(broken_teardown):
    pass


def test_warns():
    warnings.warn(DeprecationWarning("old"))


@pytest.mark.skip(reason="not today")
def test_skipped():
    pass


def test_ok():
    pass
'''
EXPECTED = {
    "test_suite.py::TestSub::test_sub": Outcome.failed,  # the parent's own report says passed
    "test_suite.py::test_pysub": Outcome.passed,
    "test_suite.py::test_pysub_fails": Outcome.failed,
    "test_suite.py::test_xpass_strict": Outcome.failed,
    "test_suite.py::test_xfailed": Outcome.passed,  # an expected failure fails no run
    "test_suite.py::test_setup": Outcome.error,
    "test_suite.py::test_teardown": Outcome.error,
    "test_suite.py::test_warns": Outcome.failed,
    "test_suite.py::test_skipped": Outcome.skipped,
    "test_suite.py::test_ok": Outcome.passed,
}


def _run(tmp_path: Path, files: dict[str, str]) -> str:
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    out = tmp_path / "outcomes.jsonl"
    env = {**os.environ, "PYTHONPATH": str(PLUGIN_DIR), "R2E_OUTCOMES": str(out)}
    subprocess.run([sys.executable, "-m", "pytest", "-p", "r2e_pytest_plugin", "-p", "no:cacheprovider", "-q",
                    "-W", "error::DeprecationWarning", "--continue-on-collection-errors", f"--rootdir={tmp_path}"],
                   cwd=tmp_path, env=env, capture_output=True, timeout=120)
    return out.read_text()


def test_every_failure_kind_is_one_outcome_per_test(tmp_path):
    results, errors = parse_outcomes(_run(tmp_path, {"test_suite.py": SUITE}))
    assert {n: r.outcome for n, r in results.items()} == EXPECTED
    assert errors == []
    assert results["test_suite.py::test_setup"].message == "RuntimeError: setup"
    assert results["test_suite.py::test_skipped"].message.endswith("not today")
    assert "DeprecationWarning" in results["test_suite.py::test_warns"].failure_text
    assert "failure_text" not in results["test_suite.py::test_warns"].model_dump()  # never stored


def test_collection_errors_are_recorded_and_the_rest_runs(tmp_path):
    results, errors = parse_outcomes(_run(tmp_path, {"test_ok.py": "def test_ok():\n    pass\n",
                                                     "test_broken.py": "import not_installed_anywhere\n"}))
    assert {n: r.outcome for n, r in results.items()} == {"test_ok.py::test_ok": Outcome.passed}
    assert [e.nodeid for e in errors] == ["test_broken.py"]
    assert "not_installed_anywhere" in errors[0].message


def test_lines_cut_short_or_foreign_are_skipped():
    text = '{"case": "a::t", "outcome": "passed"}\n{"case": "b::t", "outc\n[1]\n{"case": "c::t", "outcome": "odd"}\n'
    results, errors = parse_outcomes(text)
    assert list(results) == ["a::t"] and errors == []

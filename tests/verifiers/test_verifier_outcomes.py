"""The outcome plugin: a real pytest session per case, its JSON lines read back by verifier_results."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from repo2rlenv.verifiers.test_synthesis import verifier_outcomes
from repo2rlenv.verifiers.test_synthesis.verifier_results import Outcome, RunResult, Status, read_outcomes

PLUGIN_DIR = Path(verifier_outcomes.__file__).parent
RUNNER = """
import os, sys
sys.path.insert(0, {plugin_dir!r})
import verifier_outcomes
verifier_outcomes.FD = os.open({out!r}, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
verifier_outcomes.CASE_TIMEOUT = {timeout!r}
import pytest
sys.exit(pytest.main([{test!r}, "-q", "-p", "no:cacheprovider", "-p", "verifier_outcomes"]))
"""


def session(tmp_path: Path, source: str, *, timeout: float | None = None) -> RunResult:
    test = tmp_path / "test_sub.py"
    test.write_text(textwrap.dedent(source))
    out = tmp_path / "outcomes.jsonl"
    code = RUNNER.format(plugin_dir=str(PLUGIN_DIR), out=str(out), timeout=timeout, test=str(test))
    subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, timeout=120,
                   env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
    result = RunResult("A", Status.ok)
    read_outcomes(result, tmp_path)
    return result


def test_outcomes_by_collected_node_id(tmp_path):
    result = session(tmp_path, """
        import pytest
        def test_pass(): pass
        def test_fail(): assert False
        @pytest.mark.skip
        def test_skip(): pass
        @pytest.mark.xfail(strict=True)
        def test_xpass_strict(): pass
        @pytest.mark.xfail
        def test_xfail(): assert False
        @pytest.fixture
        def broken(): raise RuntimeError
        def test_setup_error(broken): pass
        @pytest.fixture
        def bad_teardown():
            yield
            raise RuntimeError
        def test_teardown_error(bad_teardown): pass
        @pytest.mark.parametrize("x", [1, 2])
        def test_param(x): assert x == 1
    """)
    assert result.status == Status.ok and result.clean
    assert result.collected == [f"test_sub.py::{n}" for n in (
        "test_pass", "test_fail", "test_skip", "test_xpass_strict", "test_xfail", "test_setup_error",
        "test_teardown_error", "test_param[1]", "test_param[2]")]
    by_name = {k.split("::")[1]: v for k, v in result.cases.items()}
    assert by_name == {"test_pass": Outcome.passed, "test_fail": Outcome.failed, "test_skip": Outcome.skipped,
                       "test_xpass_strict": Outcome.failed, "test_xfail": Outcome.skipped,
                       "test_setup_error": Outcome.error, "test_teardown_error": Outcome.error,
                       "test_param[1]": Outcome.passed, "test_param[2]": Outcome.failed}


def test_a_failing_unittest_subtest_fails_its_case(tmp_path):
    result = session(tmp_path, """
        import unittest
        class T(unittest.TestCase):
            def test_sub(self):
                for i in range(3):
                    with self.subTest(i=i):
                        self.assertLess(i, 2)
    """)
    assert result.cases == {"test_sub.py::T::test_sub": Outcome.failed}


def test_names_and_messages_a_test_writes_do_not_steer_its_outcome(tmp_path):
    result = session(tmp_path, """
        def test_message():
            raise AssertionError("collection failure")
        def test_rename(record_xml_attribute):
            record_xml_attribute("classname", "pytest")
            record_xml_attribute("name", "internal")
            assert False
    """)
    assert set(result.cases.values()) == {Outcome.failed} and len(result.cases) == 2


def test_a_hanging_case_fails_alone(tmp_path):
    result = session(tmp_path, """
        import time
        def test_hang():
            while True:
                time.sleep(0.01)
        def test_after(): pass
    """, timeout=1.0)
    assert result.cases == {"test_sub.py::test_hang": Outcome.failed, "test_sub.py::test_after": Outcome.passed}


def test_a_collection_error_and_a_session_that_never_finishes(tmp_path):
    broken = session(tmp_path, "raise ImportError('no')\ndef test_x(): pass\n")
    assert broken.collect_errors == ["test_sub.py"] and broken.collected == [] and not broken.clean
    exited = session(tmp_path, "import os\ndef test_x(): os._exit(0)\n")
    assert exited.status == Status.crashed


@pytest.mark.parametrize("text", ["not json\n", '{"case": 1, "outcome": "passed"}\n', '["x"]\n',
                                  '{"case": "a", "outcome": "passed"}\n{"case": "a", "outcome": "failed"}\n'])
def test_lines_the_plugin_does_not_write_make_the_run_unusable(tmp_path, text):
    (tmp_path / "outcomes.jsonl").write_text('{"collected": ["a"]}\n' + text + '{"finished": 0}\n')
    result = RunResult("B′1", Status.ok)
    read_outcomes(result, tmp_path)
    assert result.status == Status.crashed and not result.cases


def test_a_planted_symlink_or_fifo_is_no_result(tmp_path):
    (tmp_path / "outcomes.jsonl").symlink_to("/etc/passwd")
    result = RunResult("A", Status.ok)
    read_outcomes(result, tmp_path)
    assert result.status == Status.crashed
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    (tmp_path / "outcomes.jsonl").unlink()
    os.rename(fifo, tmp_path / "outcomes.jsonl")
    result = RunResult("A", Status.ok)
    read_outcomes(result, tmp_path)
    assert result.status == Status.crashed

"""`Trials` remembers how long each test took in its runs (real pytest in the local sandbox): a stage's share
of covering tests counts a test as the longest of the baseline's time and these runs', because a test can
be far slower in a small run than in the whole suite (requests: 0.003 s against 28 s)."""

from __future__ import annotations

import pytest

from repo2rlenv.baseline.runner import SuiteRunner
from repo2rlenv.pipelines.test_synthesis.test_share import fastest_tests
from repo2rlenv.pipelines.test_synthesis.trials import Trials

FILES = {
    "pyproject.toml": '[project]\nname = "tinypkg"\nversion = "0.0.1"\n[build-system]\n'
                      'requires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n',
    "tinypkg/__init__.py": "",
    "tests/test_pace.py": "import time\n\ndef test_slow():\n    time.sleep(0.5)\n\ndef test_quick():\n    pass\n",
}
SLOW, QUICK = "tests/test_pace.py::test_slow", "tests/test_pace.py::test_quick"


@pytest.fixture(scope="module")
def trials(local_repo_session):
    with local_repo_session(FILES, "trials") as (_root, sandbox, session):
        yield Trials(SuiteRunner(session, sandbox.plan.import_roots), default_timeout=60, reward_mode="gated")


def test_a_test_slower_in_a_run_than_in_the_baseline_counts_as_slow_in_later_shares(trials):
    # As the baseline saw them in the whole suite (made up here: both fast, and one test never timed).
    baseline = {SLOW: 0.001, QUICK: 0.001, "tests/test_other.py::test_untouched": 3.0}
    assert fastest_tests([SLOW, QUICK], trials.durations(baseline), 0.2).tests == [SLOW, QUICK]
    assert trials.passes({}, [SLOW, QUICK])
    seen = trials.durations(baseline)
    assert seen[SLOW] >= 0.5  # the run's time, longer than the baseline's
    assert seen[QUICK] >= 0.001  # never below the baseline's
    assert seen[QUICK] < 0.5 and seen["tests/test_other.py::test_untouched"] == 3.0
    assert fastest_tests([SLOW, QUICK], seen, 0.2).tests == [QUICK]

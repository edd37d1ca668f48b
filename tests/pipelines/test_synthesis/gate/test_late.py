"""The late gate (`gate/late.py`): the repo's whole suite runs on B once, and a task whose change any
stable-passing test notices is dropped with the reason (real pytest in the local sandbox); a test that
fails on A as well by then (the machine changed since the baseline) tells nothing about B."""

from __future__ import annotations

import pytest

from repo2rlenv.baseline.runner import SuiteRunner, run_baseline
from repo2rlenv.pipelines.test_synthesis.candidates import Candidate, Drop, GateResult, SkipReason
from repo2rlenv.pipelines.test_synthesis.gate.late import suite_on_b
from repo2rlenv.pipelines.test_synthesis.trials import Trials
from repo2rlenv.pysource.functions import discover_functions

CORE = "def scale(x):\n    return x * 10\n\n\ndef label(x):\n    return f'#{scale(x)}'\n"
# Two files: the one validation used to submit (test_scale) does not notice a change to `scale` that
# only the labels see; the other one does, through a subtest.
FILES = {
    "tests/test_scale.py": "from tinypkg.core import scale\n\ndef test_zero():\n    assert scale(0) == 0\n",
    "tests/test_label.py": ("import unittest\nfrom tinypkg.core import label\n\n"
                            "class TestLabel(unittest.TestCase):\n    def test_labels(self):\n"
                            "        for i in range(3):\n            with self.subTest(i=i):\n"
                            "                self.assertEqual(label(i), '#' + str(i * 10))\n"),
    # A stable test whose id the quarantined one's starts: `--deselect` of the one must not take the other.
    "tests/test_broken_at_a.py": ("def test_offline():\n    assert False, 'quarantined at A'\n\n\n"
                                  "def test_offline_fallback():\n    pass\n"),
}


@pytest.fixture(scope="module")
def synth(local_repo_session, tmp_path_factory):
    files = {"pyproject.toml": '[project]\nname = "tinypkg"\nversion = "0.0.1"\n[build-system]\n'
                               'requires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n',
             "tinypkg/__init__.py": "", "tinypkg/core.py": CORE, **FILES}
    # A test asserting that a path outside the repo does not exist (tinydb's `test_json_invalid_directory`).
    outside = tmp_path_factory.mktemp("outside") / "made-later"
    files["tests/test_outside.py"] = f"import os\n\ndef test_absent():\n    assert not os.path.exists({str(outside)!r})\n"
    with local_repo_session(files, "wholesuite") as (root, sandbox, session):
        runner = SuiteRunner(session, sandbox.plan.import_roots)
        baseline = run_baseline(runner, reruns=0, timeout=120)
        trials = Trials(runner, default_timeout=60, reward_mode="gated")
        func = {f.qualname: f for f in discover_functions(root, min_loc=1)[0]}["scale"]
        yield (lambda cand: suite_on_b(cand, trials, baseline, timeout=120)), func, baseline, outside


def _cand(func, new_body: str) -> Candidate:
    return Candidate(candidate_id="c", strategy="mutation", function=func, operator="hand", line=2,
                     files_b={"tinypkg/core.py": CORE.replace("return x * 10", new_body)}, diff="-\n+\n")


def test_a_change_the_suite_misses_passes(synth):
    gate, func, baseline, _ = synth
    assert "tests/test_broken_at_a.py::test_offline" in baseline.quarantined  # deselected, never read
    assert gate(_cand(func, "return x * 10 if x >= 0 else 0")) == GateResult(
        gate="whole suite on B", passed=True, detail="4 stable tests pass on B")


def test_a_change_another_test_file_notices_is_reported(synth):
    gate, func, _, _ = synth
    drop = gate(_cand(func, "return x * 10 if x < 2 else 0"))
    assert isinstance(drop, Drop) and drop.reason is SkipReason.suite_notices_b
    assert drop.detail.startswith("1 of 4 stable tests fail on B, first tests/test_label.py::TestLabel")


def test_a_change_that_breaks_a_test_module_import_is_reported(synth):
    gate, func, _, _ = synth
    drop = gate(_cand(func, "return x * 10\n\nraise ImportError('B')"))
    assert isinstance(drop, Drop) and drop.detail.startswith("2 of 4 stable tests fail on B")
    assert "not collected on B" in drop.detail


def test_a_test_that_fails_on_a_too_by_then_does_not_drop_the_change(synth):
    gate, func, _, outside = synth
    outside.mkdir()  # what a replay in this session left behind, outside the repo's copies
    try:
        assert isinstance(gate(_cand(func, "return x * 10 if x >= 0 else 0")), GateResult)
        drop = gate(_cand(func, "return x * 10 if x < 2 else 0"))  # still noticed by a test that passes on A
        assert isinstance(drop, Drop) and "tests/test_label.py::TestLabel" in drop.detail
    finally:
        outside.rmdir()


def test_the_drop_reason_is_a_skip_reason():
    assert SkipReason("the whole suite notices B") is SkipReason.suite_notices_b


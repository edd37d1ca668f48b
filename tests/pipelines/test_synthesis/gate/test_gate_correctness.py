"""Every kind of failure pytest can report counts as "the suite noticed B", in both gate runners.

A tiny package whose suite fails on B in one way per function: a unittest `subTest` (its parent test
reports passed), pytest 9's `subtests` fixture, a strict xfail that XPASSes, an error in a fixture's
setup, one in its teardown, a warning turned into an error by the repo's `filterwarnings = error`. The
subprocess gate (`GateRunner`) and the batch worker (`BatchGateRunner`) must both call every mutant
killed, and the same suite on A must give a baseline where every one of those tests is a stable gate.
Real pytest (the installed one), real coverage.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from repo2rlenv.baseline.runner import SuiteRunner, run_baseline
from repo2rlenv.pipelines.test_synthesis.candidates import Candidate
from repo2rlenv.pipelines.test_synthesis.gate.batch import BatchGateRunner
from repo2rlenv.pysource.functions import discover_functions
from repo2rlenv.pipelines.test_synthesis.gate.gates import GateRunner
from repo2rlenv.sandbox.base import Limits

CORE_PY = "tinypkg/core.py"
CORE = '''\
import warnings


def parity(x):
    return x % 2


def square(x):
    return x * x


def is_even(x):
    return x % 2 == 0


def load(name):
    return {"name": name}


def close(handle):
    handle["closed"] = True
    return handle


def legacy(x):
    return x + 1
'''
TESTS = '''\
import unittest

import pytest

from tinypkg.core import close, is_even, legacy, load, parity, square


class TestParity(unittest.TestCase):
    def test_parity(self):
        for i in range(4):
            with self.subTest(i=i):
                self.assertEqual(parity(i), i % 2)


def test_square(subtests):
    for i in range(4):
        with subtests.test(i=i):
            assert square(i) == i ** 2


@pytest.mark.xfail(strict=True, reason="3 is odd")
def test_three_is_even():
    assert is_even(3)


@pytest.fixture
def loaded():
    return load("x")


def test_loaded(loaded):
    assert loaded["name"] == "x"


@pytest.fixture
def handle():
    h = {}
    yield h
    assert close(h)["closed"] is True


def test_handle(handle):
    assert handle == {}


def test_legacy():
    assert legacy(1) == 2
'''
# kind → (function, text on A, text on B): B fails the suite only in that kind's way.
MUTANTS = {
    "unittest subTest": ("parity", "return x % 2", "return 0 if x > 1 else x % 2"),
    "pytest subtests": ("square", "return x * x", "return x * x if x < 3 else 0"),
    "strict xfail passes": ("is_even", "return x % 2 == 0", "return True"),
    "setup error": ("load", 'return {"name": name}', 'raise KeyError(name)'),
    "teardown error": ("close", 'handle["closed"] = True', 'handle["closed"] = False'),
    "warning as error": ("legacy", "return x + 1", 'warnings.warn("old", DeprecationWarning)\n    return x + 1'),
}
# A change no test can notice: the sticky failure must not make every verdict "noticed".
NEUTRAL = ("legacy", "return x + 1", "return 1 + x")
EXPECTED_GATES = {
    "tests/test_core.py::TestParity::test_parity", "tests/test_core.py::test_square",
    "tests/test_core.py::test_three_is_even", "tests/test_core.py::test_loaded",
    "tests/test_core.py::test_handle", "tests/test_core.py::test_legacy",
}


def _write_repo(root: Path) -> None:
    files = {
        "pyproject.toml": '[project]\nname = "tinypkg"\nversion = "0.0.1"\n'
                          '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n'
                          '[tool.pytest.ini_options]\nfilterwarnings = ["error"]\n',
        "tinypkg/__init__.py": "",
        CORE_PY: CORE,
        "tests/test_core.py": TESTS,
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def _candidates(root: Path) -> dict[str, Candidate]:
    functions = {f.qualname: f for f in discover_functions(root, min_loc=1)[0]}
    out = {}
    for kind, (name, old, new) in {**MUTANTS, "neutral": NEUTRAL}.items():
        at = CORE.index(old)
        out[kind] = Candidate(candidate_id=f"c{len(out)}", strategy="mutation", function=functions[name],
                              operator="hand", line=CORE.count("\n", 0, at) + 1,
                              files_b={CORE_PY: CORE[:at] + new + CORE[at + len(old):]}, diff=f"-{old}\n+{new}\n")
    return out


@pytest.fixture(scope="module", params=["local", "docker"])
def gated(request, tmp_path_factory):
    root = tmp_path_factory.mktemp("gatekinds") / "repo"
    _write_repo(root)
    sandbox = request.getfixturevalue("make_sandbox")(request.param, Limits(timeout_sec=300, cpus=2),
                                                       "gate-kinds-test", tmp_path_factory.mktemp("cache"))
    sandbox.prepare(root)
    with sandbox.open() as session:
        runner = SuiteRunner(session, sandbox.plan.import_roots)
        baseline = run_baseline(runner, reruns=1, timeout=300)
        cands = _candidates(root)
        slow = {kind: cand.model_copy(deep=True) for kind, cand in cands.items()}
        gate = GateRunner(runner, baseline, timeout=30.0)
        for cand in slow.values():
            gate.check(cand)
        fast = {kind: cand.model_copy(deep=True) for kind, cand in cands.items()}
        BatchGateRunner(runner, baseline, timeout=30.0, workers=2).check_many(list(fast.values()))
        yield baseline, slow, fast


def test_every_such_test_is_a_stable_gate_on_a(gated):
    baseline, _, _ = gated
    # The xfailing test passed in pytest's sense (an expected failure): it is a gate B can make XPASS.
    assert set(baseline.stable_passing) == EXPECTED_GATES, baseline.quarantined


@pytest.mark.parametrize("kind", list(MUTANTS))
def test_the_failure_counts_as_noticed_by_both_gate_runners(gated, kind):
    _, slow, fast = gated
    for runner, cand in (("subprocess", slow[kind]), ("worker", fast[kind])):
        assert cand.line_tests, f"{runner}: no covering test for {kind}"
        assert cand.status == "kept" and cand.killed is True, (runner, cand.gates)


def test_a_change_no_test_notices_still_survives(gated):
    _, slow, fast = gated
    for runner, cand in (("subprocess", slow["neutral"]), ("worker", fast["neutral"])):
        assert cand.line_tests == ["tests/test_core.py::test_legacy"], runner
        assert cand.status == "kept" and cand.killed is False, (runner, cand.gates)

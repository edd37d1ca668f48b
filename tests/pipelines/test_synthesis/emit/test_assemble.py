"""Task assembly's pure parts (`emit/assemble.py`): where the submission goes, which of the repo's test
files validation submits, and the verifier config built from the options. (The parts that run tests, the
oracle's coverage and the twin kinds, run end to end in the demo and `tests/pipelines/test_siblings.py`.)"""

from __future__ import annotations

import pytest

from repo2rlenv.baseline.runner import BaselineReport
from repo2rlenv.pipelines.test_synthesis.candidates import Candidate
from repo2rlenv.pipelines.test_synthesis.emit import assemble
from repo2rlenv.pipelines.test_synthesis.options import TestSynthesisOptions
from repo2rlenv.pysource.functions import FunctionRecord
from repo2rlenv.sandbox.install import InstallPlan


def _baseline(stable: list[str]) -> BaselineReport:
    return BaselineReport.model_construct(stable_passing=stable)


@pytest.mark.parametrize("stable, expected", [
    (["tests/unit/test_a.py::t", "tests/unit/test_b.py::t", "tests/test_c.py::t"], "tests/unit"),
    (["test_top.py::t"], ""),
    ([], "tests"),
])
def test_the_tests_dir_is_the_most_common_one(stable, expected):
    assert assemble.tests_dir(_baseline(stable)) == expected


@pytest.mark.parametrize("test_dir, path", [("tests", "tests/test_r2e_0badf00d.py"), ("", "test_r2e_0badf00d.py")])
def test_the_submission_path(test_dir, path):
    assert assemble.submission_path(test_dir, "0badf00d") == path


def test_existing_test_files_most_covering_first():
    cand = Candidate.model_construct(covering_tests=["t/test_a.py::x", "t/test_b.py::x", "t/test_b.py::y"])
    assert assemble.existing_test_files(cand) == ["t/test_b.py", "t/test_a.py"]


def test_the_verifier_config_takes_the_lines_kinds_and_options():
    func = FunctionRecord.model_construct(path="pkg/m.py", qualname="f")
    cand = Candidate.model_construct(function=func)
    lines = assemble.OracleLines(function_lines=[2, 3, 4], coverage_targets=[4], oracle_lines=[2, 4],
                                 baseline_full_coverage=False)
    options = TestSynthesisOptions(memory_mb=8192)
    install = InstallPlan.model_construct(import_roots=["src"])
    config = assemble.verifier_config(cand, lines, test_path="tests/test_r2e_x.py", siblings=2, kinds=("wrap",),
                                      options=options, install=install, pytest_plugins=["xdist"])
    assert (config.submission, config.target_file, config.target_qualname) == ("tests/test_r2e_x.py", "pkg/m.py", "f")
    assert (config.coverage_targets, config.oracle_lines, config.baseline_full_coverage) == ([4], [2, 4], False)
    assert config.variants.siblings == ["siblings/01.diff", "siblings/02.diff"]
    assert config.twin_kinds == ["wrap"] and config.import_roots == ["src"] and config.pytest_plugins == ["xdist"]
    assert config.memory_mb == 4096  # the verifier's own cap, whatever the sandbox was given

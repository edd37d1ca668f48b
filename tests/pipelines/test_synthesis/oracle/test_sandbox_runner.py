"""The probe's pytest sessions in a sandbox get the options every run of the repo gets: the repo's addopts
minus what breaks our runs (issue 34: bidict's `--numprocesses=auto` ran the covering tests in xdist
workers, where the harvester saw no call; a `--strict-config` stops the session at once)."""

from __future__ import annotations

import json
from pathlib import Path

from repo2rlenv.baseline.runner import SuiteRunner
from repo2rlenv.pipelines.test_synthesis.oracle.differential import synthesize_differential
from repo2rlenv.pipelines.test_synthesis.oracle.differential.differential import probe_sources
from repo2rlenv.pipelines.test_synthesis.oracle.sandbox_runner import VariantRunner
from repo2rlenv.sandbox.base import Limits

FILES = {
    "pyproject.toml": '[project]\nname = "tally"\nversion = "0.0.1"\n'
                      '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n',
    # Our runs switch the cache plugin off, so its ini key is unknown to them and `--strict-config` (dropped
    # from our runs' addopts, as `--numprocesses` is) would stop a probe session that kept it before any test.
    "pytest.ini": "[pytest]\naddopts = --strict-config -q\ncache_dir = .cache\n",
    "tally/__init__.py": "",
    "tally/core.py": "class Tally:\n    def __init__(self, start=0):\n        self.total = start\n\n"
                     "    def add(self, n):\n        self.total += n\n        return self.total\n",
    "tests/test_core.py": "from tally.core import Tally\n\n\ndef test_add():\n    t = Tally(1)\n    t.add(2)\n"
                          "    assert t.add(3) == 6\n",
}


def test_the_probe_runs_the_covering_tests_with_the_repos_cleaned_addopts(tmp_path: Path, make_sandbox):
    root = tmp_path / "repo"
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    sandbox = make_sandbox("local", Limits(timeout_sec=300, cpus=1), "probe-addopts", tmp_path / "cache")
    sandbox.prepare(root)
    files_b = {"tally/core.py": FILES["tally/core.py"].replace("self.total += n", "self.total += abs(n) - 0")
               .replace("abs(n) - 0", "n if n > 2 else 0")}
    with sandbox.open() as session:
        suite = SuiteRunner(session, sandbox.plan.import_roots)
        assert "addopts=-q" in suite.pytest_args()
        runner = VariantRunner(suite, files_b, timeout=120)
        argv = ["{scratch}/probe.py", "harvest", "--spec", "{scratch}/spec.json", "--out", "{scratch}/out.json"]
        spec = {"target_file": "tally/core.py", "module": "tally.core", "qualname": "Tally.add",
                "tests": ["tests/test_core.py::test_add"]}
        report = json.loads(runner("A", argv, {**probe_sources(), "spec.json": json.dumps(spec)}))
        assert report["tests_exit_code"] == 0
        assert len(report["entries"][0]["calls"]) == 2
        result = synthesize_differential(
            runner=runner, target_file="tally/core.py", module="tally.core", qualname="Tally.add",
            function_source_a=FILES["tally/core.py"], covering_tests=["tests/test_core.py::test_add"],
            test_path="tests/test_r2e_tally.py")
    assert result.found, (result.reason, result.detail)
    assert "tally = Tally(start=1)\n    tally.add(2)\n" in result.test_source and "tally.total == 6" in result.test_source

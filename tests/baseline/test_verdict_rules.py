"""The two pytest verdict rules side by side: the baseline plugin (`baseline/r2e_plugin/r2e_pytest_plugin.py`) and the
verifier's (`verifiers/test_synthesis/verifier_outcomes.py`) on one suite, in real pytest sessions.

They differ on purpose on exactly two cases (the plugin's docstring says why): an xfailed test and a
skipped subtest. A third difference, or one of these two gone, fails here so the docstring is revisited.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from repo2rlenv.baseline.outcomes import parse_outcomes
from repo2rlenv.verifiers.test_synthesis import verifier_outcomes

BASELINE_DIR = Path(__file__).resolve().parents[2] / "repo2rlenv" / "baseline" / "r2e_plugin"
VERIFIER_DIR = Path(verifier_outcomes.__file__).parent
SUITE = '''\
import pytest


def test_ok():
    pass


def test_fails():
    assert False


@pytest.mark.skip(reason="not today")
def test_skipped():
    pass


@pytest.mark.xfail(strict=True)
def test_xpass_strict():
    pass


@pytest.mark.xfail
def test_xfailed():
    assert False


def test_subtest_fails(subtests):
    with subtests.test():
        assert False


def test_subtest_skipped(subtests):
    with subtests.test():
        pytest.skip("one subtest skipped")
    assert True
'''
AGREE = {"test_ok": "passed", "test_fails": "failed", "test_skipped": "skipped", "test_xpass_strict": "failed",
         "test_subtest_fails": "failed"}
# case → (baseline's verdict, verifier's verdict)
DIFFER = {"test_xfailed": ("passed", "skipped"), "test_subtest_skipped": ("passed", "skipped")}
VERIFIER_RUNNER = """
import os, sys
sys.path.insert(0, {plugin_dir!r})
import verifier_outcomes
verifier_outcomes.FD = os.open({out!r}, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
import pytest
sys.exit(pytest.main([{test!r}, "-q", "-p", "no:cacheprovider", "-p", "verifier_outcomes"]))
"""


def _baseline(root: Path) -> dict[str, str]:
    out = root / "baseline.jsonl"
    env = {**os.environ, "PYTHONPATH": str(BASELINE_DIR), "R2E_OUTCOMES": str(out)}
    subprocess.run([sys.executable, "-m", "pytest", "-p", "r2e_pytest_plugin", "-p", "no:cacheprovider", "-q",
                    "test_suite.py", f"--rootdir={root}"], cwd=root, env=env, capture_output=True, timeout=120)
    results, _ = parse_outcomes(out.read_text())
    return {node.split("::")[-1]: result.outcome.value for node, result in results.items()}


def _verifier(root: Path) -> dict[str, str]:
    out = root / "verifier.jsonl"
    code = VERIFIER_RUNNER.format(plugin_dir=str(VERIFIER_DIR), out=str(out), test=str(root / "test_suite.py"))
    subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, timeout=120,
                   env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    return {r["case"].split("::")[-1]: r["outcome"] for r in lines if "case" in r}


def test_the_two_rules_differ_only_on_xfail_and_skipped_subtests(tmp_path):
    (tmp_path / "test_suite.py").write_text(SUITE)
    baseline, verifier = _baseline(tmp_path), _verifier(tmp_path)
    assert set(baseline) == set(verifier) == set(AGREE) | set(DIFFER)
    assert {case: (baseline[case], verifier[case]) for case in baseline if baseline[case] != verifier[case]} == DIFFER
    assert {case: baseline[case] for case in AGREE} == AGREE

"""`repo2rlenv doctor` in real Docker: what was detected, the baseline's figures, one line per problem, and
exit 0 only when generate can proceed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from repo2rlenv.doctor import PROBLEMS, DoctorReport, Problem, baseline_problems, describe_plan

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "minicart"


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "repo2rlenv", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=900)


def _doctor(tmp_path: Path, repo: Path, *extra: str) -> tuple[int, dict, str]:
    res = cli("doctor", "--repo", str(repo), "--sandbox", "docker", "--out", str(tmp_path / "doc"), "--json", *extra,
              env={"REPO2RLENV_CACHE": str(tmp_path / "cache")})
    assert "Traceback" not in res.stderr, res.stderr
    return res.returncode, json.loads(res.stdout), res.stderr


def test_doctor_on_the_example_can_proceed(tmp_path, docker_ready):
    code, report, _ = _doctor(tmp_path, EXAMPLE)
    assert code == 0 and report["ok"] is True
    assert report["stage_reached"] == "mining"
    assert report["tests"] == report["stable_passing"] > 50
    assert report["candidates"] > 0 and report["functions"] > 0
    labels = {label for label, _ in report["detected"]}
    assert {"install", "pytest command"} <= labels
    assert not [p for p in report["problems"] if p["blocking"]]


def test_doctor_names_each_problem(tmp_path, make_repo, tiny_package, docker_ready):
    # A suite that passes without importing the package (nothing covered) and one test failing at the ref.
    tests = "def test_arith():\n    assert 1 + 1 == 2\n\ndef test_broken():\n    assert 1 + 1 == 3\n"
    source = "def clamp(x, lo, hi):\n    if x < lo:\n        return lo\n    if x > hi:\n        return hi\n    return x\n"
    root = make_repo(tiny_package(tests, source), commit=False)
    code, report, _ = _doctor(tmp_path, root)
    assert code == 1 and report["ok"] is False and report["stage_reached"] == "baseline"
    lines = {p["kind"]: f'{p["stage"]}: {p["line"]}' for p in report["problems"]}
    assert lines["failing_at_ref"] == ("baseline: 1 tests fail at the ref (quarantined, never gates), "
                                       "e.g. tests/test_core.py::test_broken")
    assert lines["no_covered_function"].startswith("mining: no function is covered by the suite")
    # Without --json the same lines end the output, one each.
    res = cli("doctor", "--repo", str(root), "--sandbox", "docker", "--out", str(tmp_path / "doc"),
              env={"REPO2RLENV_CACHE": str(tmp_path / "cache")})
    text = " ".join(res.stderr.split())
    assert res.returncode == 1 and lines["no_covered_function"] in text and "detected" in text


def test_doctor_says_why_no_test_passes(tmp_path, make_repo, tiny_package, docker_ready):
    files = tiny_package("def test_a():\n    assert 0\n")
    files["tests/test_extra.py"] = "import r2e_no_such_module\n\ndef test_b():\n    pass\n"
    root = make_repo(files, commit=False)
    code, report, _ = _doctor(tmp_path, root)
    assert code == 1 and report["stage_reached"] == "environment"
    problems = {p["kind"]: p for p in report["problems"]}
    assert problems["baseline_failed"]["blocking"] and problems["baseline_failed"]["stage"] == "baseline"
    assert Path(problems["baseline_failed"]["log"]).is_file()
    assert problems["collection_errors"]["line"] == (
        "1 files fail to collect: tests/test_extra.py (first: ModuleNotFoundError: No module named "
        "'r2e_no_such_module')")


def test_doctor_bad_input_is_exit_2(tmp_path):
    res = cli("doctor", "--repo", "/definitely/not/here", "--out", str(tmp_path / "doc"))
    errors = [ln for ln in res.stderr.splitlines() if ln.startswith("error:")]
    assert res.returncode == 2 and len(errors) == 1 and errors[0].startswith("error: source: repository not found")
    assert not (tmp_path / "doc").exists()


def test_problem_table_renders_every_kind():
    facts = {"cause": "c", "count": 2, "files": "a.py", "first": "t::x", "reason": "r"}
    for kind, (stage, _template, _blocking) in PROBLEMS.items():
        problem = Problem.of(kind, **facts)
        assert problem.render().startswith(f"{stage}: ")
    assert Problem.of("needs_network", count=12).render() == "baseline: tests need network: 12 quarantined"
    assert Problem.of("stage_failed", stage="source", cause="c").render() == "source: c"
    assert DoctorReport(repo="x", problems=[Problem.of("flaky", count=1, first="t")]).ok
    assert not DoctorReport(repo="x", problems=[Problem.of("baseline_failed", cause="c")]).ok


def test_baseline_problems_read_quarantine_reasons():
    class Baseline:
        quarantined = {"t::a": "fails at the ref: boom", "t::b": "flaky: outcome changed", "t::n": "needs network: x"}
        needs_network = ["t::n"]
        collection_errors = {"extra/test_h.py": "No module named 'hypothesis'"}

    kinds = [p.kind for p in baseline_problems(Baseline())]
    assert kinds == ["needs_network", "collection_errors", "failing_at_ref", "flaky"]


def test_describe_prefers_the_plans_own_rows():
    class Plan:
        def describe(self):
            return [("build backend", "hatchling.build — pyproject.toml [build-system]")]

    assert describe_plan(Plan()) == [("build backend", "hatchling.build — pyproject.toml [build-system]")]
    assert describe_plan(None) == []


@pytest.mark.parametrize("kind", sorted(PROBLEMS))
def test_blocking_kinds_are_the_ones_generate_cannot_pass(kind):
    blocking = PROBLEMS[kind][2]
    assert blocking == (kind in {"environment_failed", "stage_failed", "baseline_failed", "no_covered_function",
                                 "no_candidates"})

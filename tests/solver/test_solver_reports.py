"""Diff mode's saved runs: the reports a run writes (report.json/.md/.html), and the model-free commands on
them — recheck, regression, compare, history — with real git repos and real pytest (the local sandbox)."""

from __future__ import annotations

import base64
import json
import re
import subprocess
from pathlib import Path

from click.testing import CliRunner

from repo2rlenv.cli.solver import solve
from repo2rlenv.solver.report import DiffReport, FunctionRow, write_reports


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args], cwd=cwd,
                          check=True, capture_output=True, text=True).stdout


PYPROJECT = ('[project]\nname = "pkg"\nversion = "0.0.1"\n'
             '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n')
TEST_F = "from pkg.m import f\n\n\ndef test_f():\n    assert f(1) == 2\n"
TEST_G = "from pkg.m import g\n\n\ndef test_g():\n    assert g() == 0\n"


def _two_revisions(root: Path) -> Path:
    """A repo whose first commit has f off by two and no g; the second fixes f and adds g."""
    root.mkdir()
    (root / "pyproject.toml").write_text(PYPROJECT)
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "m.py").write_text("def f(x):\n    return x - 1\n")
    (root / "tests").mkdir()
    (root / "tests" / "test_smoke.py").write_text("def test_smoke():\n    assert True\n")
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "v1")
    (root / "pkg" / "m.py").write_text("def f(x):\n    return x + 1\n\n\ndef g():\n    return 0\n")
    _git(root, "commit", "-q", "-am", "v2")
    return root


def _report(out: Path, repo: Path, files: dict[str, str], **extra) -> Path:
    rows = [FunctionRow(function="pkg/m.py::f", stop_reason="solved" if files else "round_limit", rounds=1,
                        in_patch=bool(files), test_files=list(files))]
    report = DiffReport(repo=str(repo), base="HEAD~1", diff="(diff)", model="openai/x", functions=rows, files=files,
                        patch="(patch)", settings={"test_timeout_sec": 60}, **extra)
    write_reports(out, report)
    return out


def _invoke(*args: str):
    return CliRunner().invoke(solve, list(args))


def test_recheck_reruns_the_saved_tests_and_updates_the_reports(tmp_path):
    repo = _two_revisions(tmp_path / "repo")
    out = _report(tmp_path / "run", repo, {"tests/test_r2e_f.py": TEST_F})
    before = (out / "report.json").read_text()
    res = _invoke("recheck", str(out), "--sandbox", "local", "--json")
    assert res.exit_code == 0, res.output + res.stderr
    saved = json.loads((out / "report.json").read_text())
    assert saved["recheck"]["passed"] is True
    assert [(c["nodeid"], c["outcome"]) for c in saved["recheck"]["cases"]] == [("tests/test_r2e_f.py::test_f", "passed")]
    assert "Recheck" in (out / "report.md").read_text() and saved != json.loads(before)
    # The repository moved on and broke f: the same tests now fail, and the reports say so.
    (repo / "pkg" / "m.py").write_text("def f(x):\n    return x\n")
    res = _invoke("recheck", str(out), "--sandbox", "local")
    assert res.exit_code == 1
    saved = json.loads((out / "report.json").read_text())
    assert saved["recheck"]["passed"] is False and saved["recheck"]["cases"][0]["outcome"] == "failed"


def test_regression_needs_a_case_that_fails_before_and_passes_after(tmp_path):
    repo = _two_revisions(tmp_path / "repo")
    witnessed = _report(tmp_path / "w", repo, {"tests/test_r2e_f.py": TEST_F})
    res = _invoke("regression", str(witnessed), "--before", "HEAD~1", "--after", "HEAD", "--sandbox", "local", "--json")
    assert res.exit_code == 0, res.output + res.stderr
    result = json.loads((witnessed / "regression.json").read_text())
    assert result["verdict"] == "witnessed" and result["witnesses"] == ["tests/test_r2e_f.py::test_f"]
    # Passing on both sides witnesses nothing.
    res = _invoke("regression", str(witnessed), "--before", "HEAD", "--after", "HEAD", "--sandbox", "local")
    assert res.exit_code == 1 and json.loads((witnessed / "regression.json").read_text())["verdict"] == "not_witnessed"
    # A test that cannot even be collected before (g does not exist yet) is inconclusive, not a witness.
    unclear = _report(tmp_path / "u", repo, {"tests/test_r2e_g.py": TEST_G})
    res = _invoke("regression", str(unclear), "--before", "HEAD~1", "--after", "HEAD", "--sandbox", "local")
    assert res.exit_code == 1, res.output + res.stderr
    result = json.loads((unclear / "regression.json").read_text())
    assert result["verdict"] == "inconclusive" and result["witnesses"] == [] and result["inconclusive"]
    res = _invoke("regression", str(unclear), "--before", "no-such-ref", "--after", "HEAD", "--sandbox", "local")
    assert res.exit_code == 2 and "cannot check out 'no-such-ref'" in res.stderr


def test_history_lists_reports_bounded_and_names_the_unreadable(tmp_path):
    root = tmp_path / "runs"
    _report(root / "a", tmp_path, {"tests/test_r2e_f.py": TEST_F})
    _report(root / "b" / "c", tmp_path, {})
    _report(root / "deep" / "1" / "2" / "3", tmp_path, {"tests/test_r2e_f.py": TEST_F})
    (root / "broken").mkdir()
    (root / "broken" / "report.json").write_text("{not json")
    res = _invoke("history", "--root", str(root), "--max-depth", "2", "--json")
    assert res.exit_code == 1  # partial: one report could not be read
    listed = json.loads(res.stdout)
    assert sorted(r["path"] for r in listed["reports"]) == ["a", "b/c"]
    assert len(listed["problems"]) == 1 and "broken" in listed["problems"][0]
    res = _invoke("history", "--root", str(root), "--max-depth", "9", "--status", "complete", "--json")
    assert sorted(r["path"] for r in json.loads(res.stdout)["reports"]) == ["a", "deep/1/2/3"]
    (root / "broken" / "report.json").unlink()
    assert _invoke("history", "--root", str(root)).exit_code == 0
    for bad in (["--root", str(tmp_path / "nope")], ["--root", str(root), "--max-depth", "-1"]):
        res = _invoke("history", *bad)
        assert res.exit_code == 2 and len(res.stderr.strip().splitlines()) == 1


def test_compare_writes_one_page_of_what_changed(tmp_path):
    before = _report(tmp_path / "before", tmp_path, {"tests/test_r2e_f.py": TEST_F})
    after = _report(tmp_path / "after", tmp_path, {"tests/test_r2e_g.py": TEST_G})
    page = tmp_path / "cmp.html"
    res = _invoke("compare", "--before", str(before), "--after", str(after), "--out", str(page))
    assert res.exit_code == 0, res.stderr
    text = page.read_text()
    assert "<script" not in text and "tests/test_r2e_g.py" in text and "tests/test_r2e_f.py" in text
    res = _invoke("compare", "--before", str(tmp_path / "nothing"), "--after", str(after), "--out", str(page))
    assert res.exit_code == 2 and "no report.json" in res.stderr


def test_the_report_page_is_literal_self_contained_and_carries_exact_downloads(tmp_path, dump_dom):
    code = "def test_x():\n    assert '<b>bold</b>' != '</pre><script>document.title=1</script>'\n"
    files = {"tests/test_r2e_x.py": code}
    out = _report(tmp_path / "run", tmp_path, files, unverified=["coverage (--no-coverage)"])
    html_text = (out / "report.html").read_text()
    assert "<script" not in html_text.replace("&lt;script", "")
    dom = dump_dom((out / "report.html").as_uri())
    assert "&lt;b&gt;bold&lt;/b&gt;" in dom and "<b>bold</b>" not in dom
    assert re.search(r'<strong id="status">complete</strong>', dom)
    links = dict(re.findall(r'download="([^"]+)" href="data:[^;]+;base64,([^"]+)"', dom))
    assert base64.b64decode(links["report.json"]) == (out / "report.json").read_bytes()
    assert base64.b64decode(links["tests.patch"]).decode() == "(patch)"
    assert "coverage (--no-coverage)" in dom


def test_a_failed_write_leaves_the_previous_reports_whole(tmp_path, monkeypatch):
    from repo2rlenv.solver import report as report_module

    out = _report(tmp_path / "run", tmp_path, {"tests/test_r2e_f.py": TEST_F})
    before = {name: (out / name).read_bytes() for name in report_module.REPORT_FILES}
    newer = report_module.load_report(out).model_copy(update={"model": "openai/other"})

    def broken(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(report_module, "render_html", broken)
    try:
        report_module.write_reports(out, newer)
    except RuntimeError:
        pass
    else:
        raise AssertionError("the failing render did not raise")
    assert {name: (out / name).read_bytes() for name in report_module.REPORT_FILES} == before
    assert not [p for p in out.iterdir() if p.name.startswith(".")]

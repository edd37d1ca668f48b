"""Diff mode: changed lines of a unified diff, the functions they touch, and `solve --repo --git-base` end
to end (scripted model over HTTP, the local sandbox), whose patch only adds a new test file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from repo2rlenv.cli.solver import solve
from repo2rlenv.solver.diff_mode import changed_functions, new_file_patch
from repo2rlenv.solver.diffscan import parse_diff


GIT_DIFF = """\
diff --git a/pkg/core.py b/pkg/core.py
index 111..222 100644
--- a/pkg/core.py
+++ b/pkg/core.py
@@ -3,4 +3,5 @@ def a():
 def b(x):
-    return x
+    y = x + 1
+    return y
 
@@ -20,3 +21,2 @@ def c():
     keep = 1
-    gone = 2
     return keep
diff --git a/pkg/new.py b/pkg/new.py
new file mode 100644
--- /dev/null
+++ b/pkg/new.py
@@ -0,0 +1,2 @@
+def fresh():
+    return 1
diff --git a/pkg/old.py b/pkg/old.py
deleted file mode 100644
--- a/pkg/old.py
+++ /dev/null
@@ -1 +0,0 @@
-x = 1
"""


def test_parse_diff_gives_new_side_lines_of_additions_and_deletions():
    files = parse_diff(GIT_DIFF)
    assert [(f.path, f.deleted) for f in files] == [("pkg/core.py", False), ("pkg/new.py", False), ("pkg/old.py", True)]
    core, new, _ = files
    assert core.lines == [4, 5, 22]  # 4-5 added; the deleted `gone = 2` stood at new line 22
    assert new.lines == [1, 2]
    assert core.text.startswith("diff --git a/pkg/core.py") and "-    gone = 2" in core.text and "fresh" not in core.text


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args], cwd=cwd,
                          check=True, capture_output=True, text=True).stdout


def _repo_with_change(root: Path, files: dict[str, str]) -> Path:
    """A git repo whose HEAD has `discounted` without its 0-percent branch; the working tree is `files`."""
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text.replace("    if percent == 0:\n        return price\n", ""))
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "v1")
    for rel, text in files.items():
        (root / rel).write_text(text)
    return root


def test_changed_functions_are_those_whose_lines_the_diff_touched(tmp_path, solver_kit):
    repo = _repo_with_change(tmp_path / "repo", solver_kit.TINY_FILES)
    changes, skipped = changed_functions(repo, _git(repo, "diff", "HEAD"))
    assert skipped == []
    assert [(c.target.qualname, c.target.module, c.target.test_path, c.target.import_roots) for c in changes] == [
        ("discounted", "tinyshop.prices", "tests/test_r2e_prices_discounted.py", [""])]
    assert "+    if percent == 0:" in changes[0].diff


def test_new_file_patch_applies_with_git(tmp_path):
    repo = tmp_path / "r"
    repo.mkdir()
    _git(repo, "init", "-q")
    patch = new_file_patch({"tests/test_a.py": "a = 1\nb = 2\n", "tests/unit/test_b.py": "no newline"})
    (tmp_path / "p.diff").write_text(patch)
    _git(repo, "apply", str(tmp_path / "p.diff"))
    assert (repo / "tests/test_a.py").read_text() == "a = 1\nb = 2\n"
    assert (repo / "tests/unit/test_b.py").read_text() == "no newline"


def test_solve_git_base_writes_a_patch_that_only_adds_a_test_file(tmp_path, monkeypatch, scripted, scripted_server,
                                                                   solver_kit, r2e_cache, tiny_sandbox):
    # `tiny_sandbox` prepared the venv for exactly these files in the same cache: diff mode reuses it.
    monkeypatch.setenv("REPO2RLENV_CACHE", str(r2e_cache))
    repo = _repo_with_change(tmp_path / "repo", solver_kit.TINY_FILES)
    test_path = "tests/test_r2e_prices_discounted.py"
    scripted_server.responder = solver_kit.task_responder(scripted, {test_path: solver_kit.GOOD_TESTS})
    out, patch = tmp_path / "out", tmp_path / "tests.patch"
    result = CliRunner().invoke(solve, [
        "--repo", str(repo), "--git-base", "HEAD", "--llm", solver_kit.MODEL, "--llm-base-url", scripted_server.base_url,
        "--api-key-env", "R2E_TEST_LLM_KEY", "--sandbox", "local", "--out", str(out), "--patch", str(patch)])
    assert result.exit_code == 0, result.output + result.stderr

    generate = scripted_server.requests[1].text()
    assert "+    if percent == 0:" in generate and f"**`{test_path}`**" in generate
    text = patch.read_text()
    assert text.count("diff --git") == 1 and f"+++ b/{test_path}" in text and "new file mode" in text
    _git(repo, "apply", "--check", str(patch))
    _git(repo, "apply", str(patch))
    assert (repo / test_path).read_text() == solver_kit.GOOD_TESTS
    assert _git(repo, "status", "--porcelain", "--", "tests/test_prices.py") == ""  # never overwritten
    assert (out / "ledger.jsonl").is_file()
    assert len(list((out / "trajectories").glob("*.jsonl"))) == 1
    report = json.loads((out / "report.json").read_text())
    assert report["kind"] == "diff" and report["base"] == "HEAD" and report["files"] == {test_path: solver_kit.GOOD_TESTS}
    assert report["patch"] == text and [f["in_patch"] for f in report["functions"]] == [True]
    assert "complete" in (out / "report.md").read_text() and (out / "report.html").is_file()


def test_target_chooses_functions_changed_or_not_with_the_diff_as_context(tmp_path, solver_kit):
    from repo2rlenv.solver.diff_mode import chosen_functions

    repo = _repo_with_change(tmp_path / "repo", solver_kit.TINY_FILES)
    diff = _git(repo, "diff", "HEAD")
    chosen = chosen_functions(repo, diff, ["tinyshop/prices.py::label", "./tinyshop/prices.py::discounted",
                                           "tinyshop/prices.py::label"])
    assert [(c.target.qualname, c.target.test_path) for c in chosen] == [
        ("label", "tests/test_r2e_prices_label.py"), ("discounted", "tests/test_r2e_prices_discounted.py")]
    # `label` did not change; its file did, so that file's diff is its context.
    assert all("+    if percent == 0:" in c.diff for c in chosen)


def test_solve_target_writes_tests_for_an_unchanged_function(tmp_path, monkeypatch, scripted, scripted_server,
                                                             solver_kit, r2e_cache, tiny_sandbox):
    monkeypatch.setenv("REPO2RLENV_CACHE", str(r2e_cache))
    repo = _repo_with_change(tmp_path / "repo", solver_kit.TINY_FILES)
    test_path = "tests/test_r2e_prices_label.py"
    tests = "from tinyshop.prices import label\n\n\ndef test_label():\n    assert label(2) == '$2.00'\n"
    scripted_server.responder = solver_kit.task_responder(scripted, {test_path: tests})
    patch = tmp_path / "tests.patch"
    result = CliRunner().invoke(solve, [
        "--repo", str(repo), "--git-base", "HEAD", "--target", "tinyshop/prices.py::label", "--timeout", "1.5e2",
        "--llm", solver_kit.MODEL, "--llm-base-url", scripted_server.base_url, "--api-key-env", "R2E_TEST_LLM_KEY",
        "--python", sys.executable, "--patch", str(patch), "--no-plan"])
    assert result.exit_code == 0, result.output + result.stderr
    generate = scripted_server.requests[-1].text()
    assert "`label`" in generate and "+    if percent == 0:" in generate  # the diff, as context
    text = patch.read_text()
    assert text.count("diff --git") == 1 and f"+++ b/{test_path}" in text


@pytest.mark.parametrize("flags, message", [
    (["--timeout", "0"], "--timeout must be a positive finite number of seconds"),
    (["--timeout", "-3"], "--timeout must be a positive finite number of seconds"),
    (["--timeout", "inf"], "--timeout must be a positive finite number of seconds"),
    (["--timeout", "nan"], "--timeout must be a positive finite number of seconds"),
    (["--timeout", "soon"], "--timeout must be a positive finite number of seconds"),
    (["--target", "tinyshop/prices.py"], "--target must be path.py::qualname"),
    (["--target", "tinyshop/nope.py::f"], "no file tinyshop/nope.py"),
    (["--target", "tinyshop/prices.py::nothing"], "has no function nothing"),
    (["--target", "../outside.py::f"], "no file"),
    (["--python", "/nonexistent/python3"], "--python must be a Python 3 interpreter"),
    (["--python", "/bin/true"], "--python must be a Python 3 interpreter"),
    (["--python", "{tmp}"], "--python must be a Python 3 interpreter"),
    (["--python", sys.executable, "--sandbox", "docker"], "--python runs the tests on this host"),
])
def test_bad_timeout_or_target_is_refused_before_anything_starts(tmp_path, solver_kit, flags, message):
    repo = _repo_with_change(tmp_path / "repo", solver_kit.TINY_FILES)
    (tmp_path / "outside.py").write_text("def f():\n    return 1\n")
    out = tmp_path / "out"
    # No server answers at this address: a refusal must come before any model call or sandbox.
    flags = [f.replace("{tmp}", str(tmp_path)) for f in flags]
    result = CliRunner().invoke(solve, ["--repo", str(repo), "--git-base", "HEAD", "--llm", solver_kit.MODEL,
                                        "--llm-base-url", "http://127.0.0.1:9", "--out", str(out), *flags])
    assert result.exit_code == 2, result.output + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], result.stderr
    assert not out.exists()


def test_target_belongs_to_diff_mode(tmp_path):
    result = CliRunner().invoke(solve, [str(tmp_path), "--target", "a.py::f", "--llm", "openai/x"])
    assert result.exit_code == 2 and "belong to diff mode" in result.stderr


def test_pytest_k_and_no_coverage_apply_to_every_run_and_the_report_says_so(tmp_path, monkeypatch, scripted,
                                                                            scripted_server, solver_kit, r2e_cache,
                                                                            tiny_sandbox):
    monkeypatch.setenv("REPO2RLENV_CACHE", str(r2e_cache))
    repo = _repo_with_change(tmp_path / "repo", solver_kit.TINY_FILES)
    test_path = "tests/test_r2e_prices_discounted.py"
    # test_drop fails and test_keep runs nothing of the function: only -k keep with --no-coverage solves it
    # in one round, so passing means both reached the run of the written tests.
    tests = ("from tinyshop.prices import discounted\n\n\ndef test_keep():\n    assert 1 + 1 == 2\n\n\n"
             "def test_drop():\n    assert discounted(10.0, 50) == 999\n")
    scripted_server.responder = solver_kit.task_responder(scripted, {test_path: tests})
    patch = tmp_path / "tests.patch"
    result = CliRunner().invoke(solve, [
        "--repo", str(repo), "--git-base", "HEAD", "--pytest-k", "keep", "--no-coverage", "--max-rounds", "1",
        "--llm", solver_kit.MODEL, "--llm-base-url", scripted_server.base_url, "--api-key-env", "R2E_TEST_LLM_KEY",
        "--sandbox", "local", "--patch", str(patch), "--no-plan", "--json"])
    assert result.exit_code == 0, result.output + result.stderr
    (solved,) = json.loads(result.stdout)["functions"]
    assert solved["solve"]["stop_reason"] == "solved"
    report = solved["solve"]["last_report"]
    assert [c["nodeid"].rsplit("::", 1)[-1] for c in report["cases"]] == ["test_keep"]
    assert report["coverage_measured"] is False
    unverified = solved["solve"]["unverified"]
    assert any("--no-coverage" in u for u in unverified) and any("-k 'keep'" in u for u in unverified)
    assert "not verified: coverage" in result.stderr
    # No baseline run: coverage was off.
    assert "measuring which lines the existing tests run" not in result.stderr

"""Per-commit gating (`pair_base=commit`) on scripted histories, in real sandboxes: each commit's pairs are
judged in the environment of its own dependency files, against the suite as it ran at that commit."""

from __future__ import annotations

from pathlib import Path

import pytest

from repo2rlenv.baseline.coverage_map import CoverageMap
from repo2rlenv.baseline.runner import BaselineReport
from repo2rlenv.pipelines.test_synthesis.candidates import Candidate
from repo2rlenv.pipelines.test_synthesis.commit_driver import (
    CommitDrop,
    CommitGating,
    failing_tests,
    patch_problem,
)
from repo2rlenv.pipelines.test_synthesis.mine.commit_pair import mine_commit_pairs
from repo2rlenv.pipelines.test_synthesis.options import TestSynthesisOptions
from repo2rlenv.pipelines.test_synthesis.survivor_driver import SynthesisContext
from repo2rlenv.sandbox.base import Limits
from repo2rlenv.sandbox.environments import EnvironmentPool
from repo2rlenv.sources import resolve_commit, resolve_source, snapshot

PYPROJECT = ('[project]\nname = "tinypkg"\nversion = "0.0.1"\n'
             '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n')
CORE = '''\
def add(a, b):
    total = a + b
    return total


def clamp(value, low, high):
    if value < low:
        return low
    if value > high:
        return high
    return value
'''
TESTS = '''\
from tinypkg.core import add, clamp


def test_add():
    assert add(1, 2) == 3


def test_clamp_inside():
    assert clamp(5, 0, 10) == 5
'''
FILES = {"pyproject.toml": PYPROJECT, "tinypkg/__init__.py": "", "tinypkg/core.py": CORE,
         "tests/test_core.py": TESTS}
BROKEN_ADD = CORE.replace("total = a + b", "total = a - b")


def _commit(root: Path, git, files: dict[str, str], message: str) -> str:
    for rel, text in files.items():
        (root / rel).write_text(text)
    git(root, "commit", "-q", "-am", message)
    return git(root, "rev-parse", "HEAD").strip()


def _pairs(root: Path, tmp_path: Path) -> tuple[list[Candidate], object]:
    source = resolve_source(str(root))
    ref = resolve_commit(source, None)
    a_dir = snapshot(source, ref, tmp_path / "ref")
    empty = BaselineReport(total=0, stable_passing=[], quarantined={}, coverage=CoverageMap(), duration_sec=0)
    cands, _, _ = mine_commit_pairs(source, ref, a_dir, empty, TestSynthesisOptions(), [""])
    return cands, source


def _sandbox(kind: str, cache: Path, request):
    return request.getfixturevalue("make_sandbox")(kind, Limits(timeout_sec=120, memory_mb=2048), "commit-driver-test", cache)


def _shell(options: TestSynthesisOptions, tmp_path: Path) -> SynthesisContext:
    """Gating only: synthesis never runs in these tests, so its run-wide context can stay a shell."""
    return SynthesisContext(suite=None, baseline=None, options=options, a_dir=tmp_path,  # type: ignore[arg-type]
                            tasks_root=tmp_path / "tasks", repo="tiny", repo_slug="tiny", ref=None,
                            pipeline_version="0", base_image="unused", install=None, validator=None)  # type: ignore[arg-type]


def _gating(source, sandbox, tmp_path: Path, known_failures: set[str] | None = None) -> CommitGating:
    options = TestSynthesisOptions()
    return CommitGating(source=source, pool=EnvironmentPool(sandbox), options=options, work_dir=tmp_path / "work",
                        synthesis=_shell(options, tmp_path), known_failures=known_failures)


@pytest.mark.slow
def test_a_commit_whose_suite_fails_is_dropped_with_its_reason(make_repo, run_git, tmp_path, r2e_cache, request):
    root = make_repo(FILES)
    broke = _commit(root, run_git, {"tinypkg/core.py": BROKEN_ADD}, "break add (test_add fails from here)")
    moved = _commit(root, run_git, {"tinypkg/core.py": BROKEN_ADD.replace("value > high", "value >= high")},
                    "touch clamp while add is broken")
    fixed = _commit(root, run_git, {"tinypkg/core.py": CORE.replace("value > high", "value >= high")}, "fix add")
    cands, source = _pairs(root, tmp_path)
    assert [c.commit for c in cands] == [fixed, moved, broke]
    gating = _gating(source, _sandbox("local", r2e_cache, request), tmp_path)
    try:
        gating.check_many(cands)
    finally:
        gating.close()
    by_commit = {c.commit: c for c in cands}
    # The fix of add: the suite passes there, and test_add notices its parent's add.
    assert by_commit[fixed].status == "kept" and by_commit[fixed].killed is True
    assert [g.gate for g in by_commit[fixed].gates[:3]] == ["environment", "suite passes on A", "B applies to A"]
    for sha in (moved, broke):
        cand = by_commit[sha]
        assert cand.status == "dropped" and cand.skip_reason == CommitDrop.suite_fails.value
        assert "1 failing: tests/test_core.py::test_add" in cand.gates[-1].detail
    summary = gating.summary()
    assert summary["commits_dropped"] == {CommitDrop.suite_fails.value: 2}
    # One dependency spec, one environment, three trees.
    assert [e["trees"] for e in summary["environments"]] == [3]
    # A test failing at the ref too is the environment's, not the commit's (even after a move to another file).
    retry = _gating(source, _sandbox("local", r2e_cache, request), tmp_path / "again",
                    known_failures={"tests/core/test_adding.py::test_add"})
    try:
        retry.check_many([c.model_copy(update={"gates": [], "status": "pending", "skip_reason": None})
                          for c in cands if c.commit == moved])
    finally:
        retry.close()
    assert retry.summary()["commits_dropped"] == {}


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["docker", "local"])
def test_a_dependency_change_gates_its_commits_in_a_second_environment(kind, make_repo, run_git, tmp_path,
                                                                       r2e_cache, request):
    root = make_repo({**FILES, "tinypkg/core.py": CORE.replace("value > high", "value >= high")})
    first = _commit(root, run_git, {"tinypkg/core.py": CORE}, "fix clamp")
    second = _commit(root, run_git, {"tinypkg/core.py": CORE.replace("a + b", "b + a + 0"),
                                     "pyproject.toml": PYPROJECT.replace("0.0.1", "0.0.2")}, "release, tweak add")
    cands, source = _pairs(root, tmp_path)
    assert [c.commit for c in cands] == [second, first]
    gating = _gating(source, _sandbox(kind, r2e_cache, request), tmp_path)
    try:
        gating.check_many(cands)
    finally:
        gating.close()
    assert all(c.status == "kept" for c in cands), [(c.skip_reason, c.gates) for c in cands]
    summary = gating.summary()
    keys = summary["environment_of"]
    assert keys[first] != keys[second]
    assert [(e["key"], e["trees"]) for e in summary["environments"]] == [(keys[second], 1), (keys[first], 1)]
    # Each pair records the environment it was judged in.
    for cand in cands:
        assert cand.gates[0].gate == "environment" and cand.gates[0].detail == keys[cand.commit]


def test_patch_problem_checks_the_diff_against_the_commits_tree(make_repo, run_git, tmp_path):
    root = make_repo({**FILES, "tinypkg/core.py": BROKEN_ADD})
    _commit(root, run_git, {"tinypkg/core.py": CORE}, "fix add")
    (cand,), _ = _pairs(root, tmp_path)
    tree = tmp_path / "ref"
    assert patch_problem(cand, tree) is None
    (tree / "tinypkg/core.py").write_text(CORE.replace("return total", "return total  # edited"))
    assert "does not apply" in (patch_problem(cand, tree) or "")
    (tree / "tinypkg/core.py").write_text(CORE)
    stale = cand.model_copy(update={"files_b": {"tinypkg/core.py": CORE}})
    assert patch_problem(stale, tree) == "the diff and the B files disagree"


def test_failing_tests_leaves_flaky_ones_out():
    baseline = BaselineReport(total=3, stable_passing=["t::ok"], coverage=CoverageMap(), duration_sec=0,
                              quarantined={"t::flaky": "flaky: outcome changed between baseline runs",
                                           "t::broken": "fails at the ref: AssertionError"})
    assert failing_tests(baseline) == {"t::broken"}


def test_judge_at_commits_yields_each_commit_once_in_mined_order_and_opens_no_session_unasked(
        make_repo, run_git, tmp_path, r2e_cache, request):
    from repo2rlenv.config import GenerateConfig
    from repo2rlenv.pipelines.base import PipelineResult, RunContext
    from repo2rlenv.pipelines.test_synthesis.commit_driver import judge_at_commits
    from repo2rlenv.progress import Reporter

    root = make_repo(FILES)
    first = _commit(root, run_git, {"tinypkg/core.py": CORE.replace("value > high", "value >= high")}, "clamp")
    second = _commit(root, run_git, {"tinypkg/core.py": CORE.replace("value > high", "value >= high")
                                     .replace("a + b", "b + a + 0")}, "add")
    cands, source = _pairs(root, tmp_path)
    # Interleave the two commits' pairs: each commit is still yielded once, at its first pair's place.
    mixed = [cands[0], cands[1], cands[0].model_copy(update={"candidate_id": "again"})]
    ctx = RunContext(config=GenerateConfig(repo=str(root), out=tmp_path / "out"), source=source, commit=None,
                     sandbox=_sandbox("local", r2e_cache, request), out_dir=tmp_path / "out",
                     work_dir=tmp_path / "work", reporter=Reporter(quiet=True))
    result = PipelineResult()
    options = TestSynthesisOptions()
    shell = _shell(options, tmp_path)
    empty = BaselineReport(total=0, stable_passing=[], quarantined={}, coverage=CoverageMap(), duration_sec=0)
    works = list(judge_at_commits(ctx, options, shell, empty, mixed, result))
    assert [(w.sha, [c.candidate_id for c in w.pairs]) for w in works] == [
        (second, [cands[0].candidate_id, "again"]), (first, [cands[1].candidate_id])]
    # Nothing was gated, so no commit was snapshotted or given an environment; the summary is recorded.
    assert result.details["commit_pair"]["commits"] == 0 and result.stages["commit environments"] == 0
    assert list(judge_at_commits(ctx, options, shell, empty, [], result)) == []


@pytest.mark.slow
def test_a_change_carrying_tests_is_judged_with_the_parents_tests(make_repo, run_git, tmp_path, r2e_cache, request):
    # `edited` changes add's result and edits the test that pinned it: the parent's test fails on A, so the
    # existing suite notices the change and the commit is dropped. `added` fixes clamp with a new test file:
    # A is judged without that file (the parent's suite), and its pair is gated.
    root = make_repo({**FILES, "tinypkg/core.py": CORE.replace("value > high", "value >= high")})
    added = _commit(root, run_git, {"tinypkg/core.py": CORE, "tests/test_new.py":
                                    "from tinypkg.core import clamp\n\n\ndef test_top():\n"
                                    "    assert clamp(10, 0, 10) == 10\n"}, "fix clamp, with a test")
    edited = _commit(root, run_git, {"tinypkg/core.py": CORE.replace("total = a + b", "total = a + b + 0 * 1 + 1"),
                                     "tests/test_core.py": TESTS.replace("== 3", "== 4")}, "add one, edit its test")
    cands, source = _pairs(root, tmp_path)
    assert [c.commit for c in cands] == [edited, added]
    gating = _gating(source, _sandbox("local", r2e_cache, request), tmp_path)
    try:
        gating.check_many(cands)
    finally:
        gating.close()
    by_commit = {c.commit: c for c in cands}
    assert by_commit[edited].status == "dropped"
    assert by_commit[edited].skip_reason == CommitDrop.parent_suite_notices.value
    assert "test_add" in by_commit[edited].gates[-1].detail
    assert by_commit[added].status == "kept", by_commit[added].gates
    # The suite that ran on A was the parent's: the change's own test covers clamp but is not among them.
    assert by_commit[added].covering_tests == ["tests/test_core.py::test_clamp_inside"]
    assert gating.summary()["commits_dropped"] == {CommitDrop.parent_suite_notices.value: 1}


MISC = "def double(x):\n    result = x * 2\n    return result\n"
MISC_TESTS = "from tinypkg.misc import double\n\n\ndef test_double():\n    assert double(2) == 4\n"


@pytest.mark.slow
def test_a_commit_is_gated_on_its_covering_tests_and_the_whole_suite_runs_once_an_oracle_needs_it(
        make_repo, run_git, tmp_path, r2e_cache, request):
    # The commit changes clamp (no test notices) and breaks double, which only tests/test_misc*.py run. Its
    # clamp pair is gated on tests/test_core.py alone; the whole suite, run when the pair needs it, finds
    # test_misc failing at the commit and drops it.
    misc_tests = {f"tests/test_misc{i}.py": MISC_TESTS.replace("test_double", f"test_double_{i}") for i in range(4)}
    root = make_repo({**FILES, "tinypkg/misc.py": MISC, **misc_tests})
    both = _commit(root, run_git, {"tinypkg/core.py": CORE.replace("value > high", "value >= high"),
                                   "tinypkg/misc.py": MISC.replace("x * 2", "x * 3")}, "clamp, and break double")
    _commit(root, run_git, {"tinypkg/misc.py": MISC}, "fix double")
    cands, source = _pairs(root, tmp_path)
    clamp = [c for c in cands if c.commit == both and c.function.name == "clamp"]
    assert len(clamp) == 1
    gating = _gating(source, _sandbox("local", r2e_cache, request), tmp_path)
    try:
        gating.check_many(clamp)
        cand = clamp[0]
        assert cand.status == "kept", cand.gates
        assert [g.gate for g in cand.gates[:2]] == ["environment", "covering tests pass on A"]
        assert cand.covering_tests == ["tests/test_core.py::test_clamp_inside"]
        assert gating.summary()["scope_of"] == {both: "1 of 5 test files (covering the change)"}
        assert gating.commits[both].whole is None  # nothing else ran yet
        whole = gating._whole_suite(gating.commits[both], gating.active.runner)
        assert whole.reason == CommitDrop.suite_fails.value
        assert "4 failing: tests/test_misc0.py::test_double_0" in whole.detail
        # The commit's remaining pairs are dropped without a session.
        later = cand.model_copy(update={"candidate_id": "later"})
        gating.commits[both].undecided.add("later")
        assert gating.synthesize(later) is None and later.skip_reason == CommitDrop.suite_fails.value
    finally:
        gating.close()
    assert gating.summary()["seconds"][both] > 0

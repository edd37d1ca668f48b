"""The hybrid miner: commit pairs first, mutants of the other functions after, no function twice."""

from __future__ import annotations

from pathlib import Path

import pytest

from repo2rlenv.baseline.coverage_map import CoverageMap, FileCoverage
from repo2rlenv.baseline.runner import BaselineReport
from repo2rlenv.pipelines.test_synthesis.mine.pairs_then_mutants import mine_hybrid
from repo2rlenv.pipelines.test_synthesis.options import TestSynthesisOptions
from repo2rlenv.sources import resolve_commit, resolve_source, snapshot

MATH = '''\
def total(values):
    acc = 0
    for v in values:
        acc += v
    return acc


def bounded(value, high):
    if value > high:
        return high
    return value
'''
BASELINE = BaselineReport(
    total=1, stable_passing=["tests/test_math.py::test_total"], quarantined={}, duration_sec=0.0,
    coverage=CoverageMap(files={"mathpkg/ops.py": FileCoverage(executable=list(range(1, 12)), executed=[1])}))


@pytest.fixture
def repo(make_repo, run_git) -> Path:
    """`mathpkg` whose last commit fixed `bounded` (it returned 0 above the bound) without a test."""
    root = make_repo({
        "mathpkg/__init__.py": "",
        "mathpkg/ops.py": MATH.replace("        return high", "        return 0"),
        "tests/test_math.py": "from mathpkg.ops import total\n\n\ndef test_total():\n    assert total([1, 2]) == 3\n",
    })
    (root / "mathpkg" / "ops.py").write_text(MATH)
    run_git(root, "commit", "-q", "-am", "fix bounded")
    return root


def hybrid(root: Path, tmp_path: Path, name: str) -> tuple[list, dict[str, int], int]:
    source = resolve_source(str(root))
    ref = resolve_commit(source, None)
    a_dir = snapshot(source, ref, tmp_path / name)
    cands, skipped, functions, scanned = mine_hybrid(source, ref, a_dir, BASELINE, TestSynthesisOptions(), [""])
    assert {f.qualname for f in functions} == {"total", "bounded"}
    return cands, dict(skipped), scanned


def test_commit_pairs_come_first_and_their_functions_get_no_mutants(repo, tmp_path):
    cands, skipped, scanned = hybrid(repo, tmp_path, "a")
    assert scanned == 2
    first, *rest = cands
    assert (first.strategy, first.function.qualname) == ("commit_pair", "bounded")
    assert rest and {c.strategy for c in rest} == {"mutation"}
    assert {c.function.qualname for c in rest} == {"total"}
    assert skipped["function: has a commit_pair candidate"] == 1
    assert len({c.candidate_id for c in cands}) == len(cands)


def test_mutation_fills_when_there_is_no_history(repo, tmp_path, run_git):
    # A plain directory: no history at all.
    plain = tmp_path / "plain"
    plain.mkdir()
    for rel in ("mathpkg/__init__.py", "mathpkg/ops.py", "tests/test_math.py"):
        (plain / rel).parent.mkdir(parents=True, exist_ok=True)
        (plain / rel).write_text((repo / rel).read_text())
    cands, skipped, scanned = hybrid(plain, tmp_path, "a-plain")
    assert scanned == 0 and skipped["commit: no git history (plain directory)"] == 1
    assert {c.strategy for c in cands} == {"mutation"}
    assert {c.function.qualname for c in cands} == {"total", "bounded"}
    # A shallow clone that ends before the fix's parent: the same fill, with its reason.
    run_git(tmp_path, "clone", "-q", "--depth", "1", f"file://{repo}", "shallow")
    cands, skipped, _ = hybrid(tmp_path / "shallow", tmp_path, "a-shallow")
    assert skipped["commit: history too short (shallow clone)"] == 1
    assert {c.strategy for c in cands} == {"mutation"} and len({c.function.key for c in cands}) == 2


def test_history_without_usable_commits_leaves_every_function_to_mutation(make_repo, tmp_path):
    root = make_repo({"mathpkg/__init__.py": "", "mathpkg/ops.py": MATH,
                      "tests/test_math.py": "def test_nothing():\n    assert True\n"})
    cands, skipped, scanned = hybrid(root, tmp_path, "a")
    assert scanned == 1 and skipped["commit: root commit"] == 1
    assert "function: has a commit_pair candidate" not in skipped
    assert {c.function.qualname for c in cands} == {"total", "bounded"}


def test_a_pair_at_an_older_layout_still_keeps_its_function_from_mutation(repo, tmp_path, run_git):
    # The fix was made at `mathpkg/ops.py`; the ref has it at `src/mathpkg/ops.py`. With pair_base=commit the
    # pair keeps the commit's path, and the function is still recognised as the same one.
    (repo / "src").mkdir()
    run_git(repo, "mv", "mathpkg", "src/mathpkg")
    run_git(repo, "commit", "-q", "-m", "src layout")
    source = resolve_source(str(repo))
    ref = resolve_commit(source, None)
    a_dir = snapshot(source, ref, tmp_path / "a")
    baseline = BaselineReport(total=1, stable_passing=["tests/test_math.py::test_total"], quarantined={}, duration_sec=0,
                              coverage=CoverageMap(files={"src/mathpkg/ops.py": FileCoverage(
                                  executable=list(range(1, 12)), executed=[1])}))
    cands, skipped, _, _ = mine_hybrid(source, ref, a_dir, baseline, TestSynthesisOptions(pair_base="commit"), ["src"])
    first, *rest = cands
    assert (first.strategy, first.function.path, first.function.qualname) == ("commit_pair", "mathpkg/ops.py", "bounded")
    assert rest and {(c.strategy, c.function.path, c.function.qualname) for c in rest} == {
        ("mutation", "src/mathpkg/ops.py", "total")}
    assert skipped["function: has a commit_pair candidate"] == 1

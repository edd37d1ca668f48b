"""Duplicate tasks: the three rules, groups kept whole whatever the order, and the merge on disk."""

from __future__ import annotations

import json
import random
from pathlib import Path

from repo2rlenv.dataset import dedup
from repo2rlenv.dataset.manifest import ValidationSummary, save_validation
from repo2rlenv.dataset.taskdir import DatasetPaths


def _diff(old: str, new: str, at: int = 10) -> str:
    return f"--- a/pkg/mod.py\n+++ b/pkg/mod.py\n@@ -{at},2 +{at},2 @@\n def f(x):\n-    {old}\n+    {new}\n"


B1 = _diff("return x + 1", "return x - 1")
B2 = _diff("return x + 1", "return x + 2")
B3 = _diff("return x + 1", "return x * 1")
ORACLE = "from pkg.mod import f\n\n\ndef test_f():\n    assert f(1) == 2\n"
OTHER_ORACLE = "from pkg.mod import f\n\n\ndef test_f():\n    assert f(3) == 4\n"


def test_the_same_change_at_other_line_numbers_is_a_duplicate(tmp_path, make_task):
    make_task(tmp_path, "o__r-ts-aaaa", diff=B1)
    make_task(tmp_path, "o__r-ts-bbbb", diff=_diff("return x + 1", "return x - 1", at=40), oracle=OTHER_ORACLE,
              repo="fork/r")
    merges = dedup.plan_merges(dedup.dataset_prints(DatasetPaths(tmp_path)))
    assert [(m.task_id, m.kept, m.rule, m.graded_by_kept) for m in merges] == [
        ("o__r-ts-bbbb", "o__r-ts-aaaa", "same change", True)]


def test_each_others_siblings_are_duplicates_but_one_way_is_not(tmp_path, make_task):
    make_task(tmp_path, "t-1", diff=B1, siblings=[B2], oracle=ORACLE)
    make_task(tmp_path, "t-2", diff=B2, siblings=[B1, B3], oracle=OTHER_ORACLE)
    make_task(tmp_path, "t-3", diff=B3, oracle="def test_g():\n    assert 1\n")  # only t-2 catches B3
    merges = dedup.plan_merges(dedup.dataset_prints(DatasetPaths(tmp_path)))
    # t-2 has more siblings, so it stays; t-3's B is t-2's sibling, but t-3 does not grade B2.
    assert [(m.task_id, m.kept, m.rule, m.graded_by_kept) for m in merges] == [
        ("t-1", "t-2", "each other's siblings", True)]


def test_the_same_oracle_merges_and_says_the_kept_task_does_not_grade_that_b(tmp_path, make_task):
    make_task(tmp_path, "t-1", diff=B1, oracle="from pkg.mod import f\n\n\ndef test_f():\n"
                                                "    assert f(1) == 2, 'test_r2e_1111'\n")
    # The same test, laid out differently, with a comment and its own file's name.
    make_task(tmp_path, "t-2", diff=B2, oracle="# reference\nfrom pkg.mod import f\ndef test_f():  # x\n"
                                                "    assert f(1) == 2, 'test_r2e_abcd'\n")
    merges = dedup.plan_merges(dedup.dataset_prints(DatasetPaths(tmp_path)))
    assert [(m.task_id, m.kept, m.rule, m.graded_by_kept) for m in merges] == [("t-2", "t-1", "same oracle", False)]


def test_other_functions_never_merge(tmp_path, make_task):
    make_task(tmp_path, "t-1", diff=B1)
    make_task(tmp_path, "t-2", diff=B1, function="pkg/mod.py::g")
    assert dedup.plan_merges(dedup.dataset_prints(DatasetPaths(tmp_path))) == []


def test_the_kept_task_does_not_depend_on_order(tmp_path, make_task):
    make_task(tmp_path, "t-1", diff=B1, siblings=[B2])
    make_task(tmp_path, "t-2", diff=B2, siblings=[B1, B3])
    make_task(tmp_path, "t-3", diff=B3, siblings=[B2], oracle=OTHER_ORACLE)
    make_task(tmp_path, "t-4", diff=B1)  # same change as t-1
    prints = dedup.dataset_prints(DatasetPaths(tmp_path))
    first = dedup.plan_merges(prints)
    assert {m.kept for m in first} == {"t-2"} and {m.task_id for m in first} == {"t-1", "t-3", "t-4"}
    for seed in range(5):
        random.Random(seed).shuffle(prints)
        assert dedup.plan_merges(prints) == first


def test_merging_removes_the_duplicates_and_records_them(tmp_path, make_task):
    dataset = DatasetPaths(tmp_path)
    make_task(tmp_path, "t-1", diff=B1, siblings=[B2])
    make_task(tmp_path, "t-2", diff=B1)
    save_validation(dataset, "t-2", ValidationSummary(ok=True, mode="docker", oracle_reward=1.0, empty_reward=0.0,
                                                      existing_tests_reward=0.0, content_key="k"))
    report = dedup.merge_duplicates(dataset)
    assert dataset.task_ids() == ["t-1"] and not (tmp_path / "validation" / "t-2.json").exists()
    assert not list((tmp_path / "tasks").glob(".*"))  # no staging debris
    saved = json.loads((tmp_path / "dedup.json").read_text())
    assert saved["merged"] == [{"task_id": "t-2", "kept": "t-1", "rule": "same change", "graded_by_kept": True}]
    # A rerun changes nothing; a republished duplicate is merged again; an earlier merge stays listed.
    assert dedup.merge_duplicates(dataset) == report
    make_task(tmp_path, "t-2", diff=B1)
    assert dedup.merge_duplicates(dataset) == report and dataset.task_ids() == ["t-1"]
    # A later, better task takes the group over: the earlier merge now points at it.
    make_task(tmp_path, "t-0", diff=B1, siblings=[B2, B3])
    report = dedup.merge_duplicates(dataset)
    assert dataset.task_ids() == ["t-0"]
    assert {(m.task_id, m.kept) for m in report.merged} == {("t-1", "t-0"), ("t-2", "t-0")}


def test_an_oracle_that_does_not_parse_matches_nothing(tmp_path, make_task):
    make_task(tmp_path, "t-1", diff=B1, oracle="def (:\n")
    make_task(tmp_path, "t-2", diff=B2, oracle="def (:\n")
    assert dedup.plan_merges(dedup.dataset_prints(DatasetPaths(tmp_path))) == []

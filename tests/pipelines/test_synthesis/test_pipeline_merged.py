"""A rerun of generate counts a task its earlier run merged into a duplicate as made: it is not remade
(and merged again) but resumed, like a task still on disk."""

from __future__ import annotations

from types import SimpleNamespace

from repo2rlenv.dataset.dedup import merge_duplicates
from repo2rlenv.dataset.taskdir import DatasetPaths
from repo2rlenv.pipelines.test_synthesis.options import TestSynthesisOptions
from repo2rlenv.pipelines.test_synthesis.pipeline import _Decisions

B1 = "--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n def f(x):\n-    return x\n+    return -x\n"
B2 = "--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n def f(x):\n-    return x\n+    return 0\n"


def test_merged_tasks_count_as_existing_for_a_rerun(tmp_path, make_task):
    make_task(tmp_path, "r-ts-1", diff=B1, siblings=[B2], oracle="def test_a():\n    assert 1\n")
    make_task(tmp_path, "r-ts-2", diff=B2, siblings=[B1], oracle="def test_b():\n    assert 1\n")
    report = merge_duplicates(DatasetPaths(tmp_path))
    assert [m.task_id for m in report.merged] == ["r-ts-2"]
    ctx = SimpleNamespace(out_dir=tmp_path, source=SimpleNamespace(slug="o__r"), commit="c" * 40)
    decisions = _Decisions.load(ctx, TestSynthesisOptions(), a_digest="d")
    assert decisions.existing == {"r-ts-1", "r-ts-2"}

"""Duplicates across a corpus's repos are merged as repos finish, and which task stays does not depend on
the order they finished in. The repos' runs are scripted here (task files written into their run folders);
tests/corpus/test_driver.py runs real repos through the same driver."""

from __future__ import annotations

import json
from pathlib import Path

from repo2rlenv.config import GenerateConfig
from repo2rlenv.corpus.driver import plan_corpus, run_corpus
from repo2rlenv.corpus.entries import RepoEntry
from repo2rlenv.corpus.models import Finished, RepoJob, RepoOutcome
from repo2rlenv.dataset.taskdir import DatasetPaths
from repo2rlenv.progress import Reporter

from .conftest import tree_digest


def _diff(new: str) -> str:
    return f"--- a/pkg/mod.py\n+++ b/pkg/mod.py\n@@ -3,2 +3,2 @@\n def f(x):\n-    return x + 1\n+    {new}\n"


B1, B2, B3 = _diff("return x - 1"), _diff("return x + 2"), _diff("return x * 1")


class ScriptedExecutor:
    """Runs every submitted repo at once by writing its scripted tasks into its run folder, and finishes
    them in `order` (all slots free, so every repo is submitted before any finishes)."""

    name = "scripted"

    def __init__(self, root: Path, script: dict[str, list[dict]], order: list[str], make_task):
        self.root, self.script, self.order, self.make_task = root, script, order, make_task
        self.slots = len(script)
        self.jobs: dict[str, RepoJob] = {}
        self.submitted = 0

    def submit(self, job: RepoJob, limit: int) -> None:
        for task in self.script[job.name]:
            # Each task its own reference test, so only the changes decide.
            oracle = f"def test_{task['id'].replace('-', '_')}():\n    assert 1\n"
            self.make_task(job.config.out, task["id"], diff=task["diff"], siblings=task.get("siblings", ()),
                           oracle=oracle)
        self.jobs[job.name] = job
        self.submitted += 1

    def poll(self, timeout: float) -> list[Finished]:
        if self.submitted < len(self.script):
            return []
        name = self.order[0]
        job = self.jobs.pop(name)
        self.order.remove(name)
        return [Finished(job, RepoOutcome(name=name, repo=job.config.repo, status="done", stage_reached="done",
                                          limit=5, emitted=[t["id"] for t in self.script[name]]))]

    def events(self):
        return []

    def close(self) -> None:
        pass


SCRIPT = {
    "a": [{"id": "a-ts-1", "diff": B1, "siblings": [B2]}, {"id": "a-ts-2", "diff": B3}],
    # b's first task is a's first change again, with more siblings: it is the one kept.
    "b": [{"id": "b-ts-1", "diff": B1, "siblings": [B2, B3]}],
    "c": [{"id": "c-ts-1", "diff": B2, "siblings": [B1]}],  # each other's siblings with a-ts-1 and b-ts-1
}


def _run(tmp_path: Path, order: list[str], make_task) -> tuple[Path, dict]:
    out = tmp_path / "-".join(order)
    base = GenerateConfig(repo="x", out=out, pipeline_opts={"strategy": "mutation"})
    for name in SCRIPT:
        (tmp_path / name).mkdir(exist_ok=True)
    entries = [RepoEntry(spec=str(tmp_path / name)) for name in SCRIPT]
    plan = plan_corpus(base, entries, max_tasks=None)
    names = {e.name: n for e, n in zip(entries, SCRIPT)}
    script = {e.name: SCRIPT[names[e.name]] for e in entries}
    order_names = [next(e.name for e in entries if names[e.name] == n) for n in order]
    run_corpus(plan, lambda root: ScriptedExecutor(root, script, order_names, make_task), Reporter(quiet=True))
    return out, json.loads((out / "summary.json").read_text())


def test_duplicates_are_merged_whatever_order_repos_finish_in(tmp_path, make_task):
    out, summary = _run(tmp_path, ["a", "b", "c"], make_task)
    assert DatasetPaths(out).task_ids() == ["a-ts-2", "b-ts-1"]
    assert summary["totals"]["emitted"] == 4 and summary["totals"]["merged"] == 2
    merged = {r["repo"].rsplit("/", 1)[-1]: r["merged"] for r in summary["repos"]}
    assert merged == {"a": {"a-ts-1": "b-ts-1"}, "b": {}, "c": {"c-ts-1": "b-ts-1"}}
    report = json.loads((out / "dedup.json").read_text())
    assert {(m["task_id"], m["rule"]) for m in report["merged"]} == {("a-ts-1", "same change"),
                                                                   ("c-ts-1", "each other's siblings")}
    for order in (["c", "b", "a"], ["b", "a", "c"]):
        other, other_summary = _run(tmp_path, order, make_task)
        assert tree_digest(other / "tasks") == tree_digest(out / "tasks")
        assert other_summary["totals"] == summary["totals"]


def test_tasks_a_repo_merged_itself_are_not_missing(tmp_path, make_task):
    # The repo's run made two tasks that are each other's siblings and merged one (as generate does).
    from repo2rlenv.dataset.dedup import merge_duplicates

    out = tmp_path / "out"
    (tmp_path / "d").mkdir()
    entry = RepoEntry(spec=str(tmp_path / "d"))
    plan = plan_corpus(GenerateConfig(repo="x", out=out, pipeline_opts={"strategy": "mutation"}), [entry],
                       max_tasks=None)

    class OneRun(ScriptedExecutor):
        def submit(self, job, limit):
            make_task(job.config.out, "d-ts-1", diff=B1, siblings=[B2, B3], oracle="def test_1():\n    assert 1\n")
            make_task(job.config.out, "d-ts-2", diff=B2, siblings=[B1], oracle="def test_2():\n    assert 1\n")
            merge_duplicates(DatasetPaths(job.config.out))
            self.jobs[job.name] = job
            self.submitted += 1

    script = {entry.name: [{"id": "d-ts-1"}, {"id": "d-ts-2"}]}
    summary = run_corpus(plan, lambda root: OneRun(root, script, [entry.name], make_task), Reporter(quiet=True))
    (repo,) = summary.repos
    assert repo.error is None and repo.emitted == ["d-ts-1", "d-ts-2"]
    assert repo.merged == {"d-ts-2": "d-ts-1"} and summary.totals.merged == 1
    assert DatasetPaths(out).task_ids() == ["d-ts-1"]


def test_max_tasks_counts_distinct_tasks_so_a_later_repo_refills_a_merge(tmp_path, make_task):
    """Issue 34, item 6: a repo whose run merged one of its two tasks used one place of `--max-tasks 2`,
    so the next repo starts with the place the merge freed (before, it was never run)."""
    from repo2rlenv.dataset.dedup import merge_duplicates

    out = tmp_path / "out"
    for name in ("d", "e"):
        (tmp_path / name).mkdir()
    first, second = RepoEntry(spec=str(tmp_path / "d")), RepoEntry(spec=str(tmp_path / "e"))
    plan = plan_corpus(GenerateConfig(repo="x", out=out, pipeline_opts={"strategy": "mutation"}), [first, second],
                       max_tasks=2)
    tasks = {first.name: [("d-ts-1", B1, [B2, B3]), ("d-ts-2", B2, [B1])], second.name: [("e-ts-1", B3, [])]}
    budgets = {}

    class InTurn(ScriptedExecutor):
        def submit(self, job, limit):
            budgets[job.name] = limit
            for task_id, diff, siblings in tasks[job.name]:
                oracle = f"def test_{task_id.replace('-', '_')}():\n    assert 1\n"
                make_task(job.config.out, task_id, diff=diff, siblings=siblings, oracle=oracle,
                          function=f"{job.name}.py::f")
            merge_duplicates(DatasetPaths(job.config.out))
            self.jobs[job.name] = job

        def poll(self, timeout):
            done = [Finished(job, RepoOutcome(name=name, repo=job.config.repo, status="done", stage_reached="done",
                                              limit=budgets[name], emitted=[t for t, _, _ in tasks[name]]))
                    for name, job in self.jobs.items()]
            self.jobs = {}
            return done

    summary = run_corpus(plan, lambda root: InTurn(root, tasks, [], make_task), Reporter(quiet=True))
    assert budgets == {first.name: 2, second.name: 1}
    assert [r.status for r in summary.repos] == ["done", "done"]
    assert summary.totals.emitted == 3 and summary.totals.merged == 1
    assert DatasetPaths(out).task_ids() == ["d-ts-1", "e-ts-1"]

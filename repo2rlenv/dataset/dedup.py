"""Duplicate tasks in a dataset: which ones are the same task, and the merge that keeps one of each.

Two tasks are duplicates when they change the same function (`touched_function`) and any of these holds:

- **same change**: their hidden B is the same edit of the same text (the diffs' bodies agree, line
  numbers aside), as when one repo is listed twice, under two refs where the function did not change, or
  as a fork;
- **each other's siblings**: X's B is one of Y's hidden siblings and Y's B one of X's, so each oracle
  already catches the other's change and the two tasks grade the same family of changes;
- **same oracle**: their reference tests are the same test (the same syntax tree once names of the test
  file are set aside), so whatever tells one B from A tells the other.

Duplicates are grouped transitively; a group keeps the task with the most siblings (then a validated one,
then the smallest id), so the choice does not depend on the order tasks arrived in. The others are merged
into it: removed from `tasks/` and listed in `dedup.json` with the kept id, the rule that matched, and
whether the kept task grades their B (as its own B or as a sibling).
"""

from __future__ import annotations

import ast
import hashlib
import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from repo2rlenv import atomic
from repo2rlenv.dataset.manifest import load_validation, validation_path
from repo2rlenv.dataset.taskdir import DatasetPaths, TaskPaths

# History: 1 = first version.
DEDUP_SCHEMA_VERSION = 1
DEDUP_FILE = "dedup.json"

Rule = Literal["same change", "each other's siblings", "same oracle"]


class TaskPrint(BaseModel):
    """What decides whether a task duplicates another, read from its files."""

    model_config = ConfigDict(extra="forbid")

    task_id: str
    repo: str
    function: str = Field(description="touched_function: path::qualname.")
    change: str = Field(description="Digest of B's diff body (line numbers aside).")
    siblings: list[str] = Field(default_factory=list, description="Digests of the hidden siblings' diff bodies.")
    oracle: str | None = Field(None, description="Digest of the reference tests' syntax tree.")
    validated: bool = False


class Merge(BaseModel):
    model_config = ConfigDict(extra="forbid")

    task_id: str
    kept: str
    rule: Rule
    graded_by_kept: bool = Field(description="The kept task grades this task's B, as its B or as a sibling.")


class DedupReport(BaseModel):
    """dedup.json: the merges of a dataset, newest state (a task merged earlier and still absent stays listed)."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = DEDUP_SCHEMA_VERSION
    merged: list[Merge] = Field(default_factory=list)

    @property
    def by_task(self) -> dict[str, Merge]:
        return {m.task_id: m for m in self.merged}


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def diff_body(diff: str) -> str:
    """A diff's change without where it sits: the hunks' lines, no file headers or hunk line numbers."""
    lines = [line for line in diff.splitlines()
             if not line.startswith(("--- ", "+++ ", "diff ", "index ")) and not line.startswith("@@")]
    return "\n".join(line.rstrip() for line in lines)


# The test file's own name (test_r2e_<hash>) differs per task; a reference to it is not part of the test.
_OWN_NAME = re.compile(r"test_r2e_[0-9a-f]+")


def oracle_digest(source: str) -> str | None:
    """The reference tests as a syntax tree (comments and layout aside), or None when they do not parse."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    return _digest(_OWN_NAME.sub("test_r2e", ast.dump(tree, annotate_fields=False)))


def task_print(task: TaskPaths, *, validated: bool = False) -> TaskPrint:
    r2e = task.config().metadata.repo2env
    ts = r2e.test_synthesis
    oracle = task.solution / Path(ts.test_path).name
    siblings = sorted(task.siblings.glob("*.diff")) if task.siblings.is_dir() else []
    return TaskPrint(
        task_id=task.root.name, repo=r2e.repo, function=ts.touched_function,
        change=_digest(diff_body(task.broken_patch.read_text())),
        siblings=sorted(_digest(diff_body(p.read_text())) for p in siblings),
        oracle=oracle_digest(oracle.read_text()) if oracle.is_file() else None, validated=validated)


def _rule(x: TaskPrint, y: TaskPrint) -> Rule | None:
    if x.function != y.function:
        return None
    if x.change == y.change:
        return "same change"
    if x.change in y.siblings and y.change in x.siblings:
        return "each other's siblings"
    if x.oracle is not None and x.oracle == y.oracle:
        return "same oracle"
    return None


def _rank(p: TaskPrint) -> tuple:
    return (-len(p.siblings), not p.validated, p.task_id)


def plan_merges(prints: list[TaskPrint]) -> list[Merge]:
    """The merges that leave one task of each group of duplicates (see the module's doc)."""
    parent = {p.task_id: p.task_id for p in prints}

    def root(task_id: str) -> str:
        while parent[task_id] != task_id:
            parent[task_id] = parent[parent[task_id]]
            task_id = parent[task_id]
        return task_id

    rules: dict[str, Rule] = {}
    by_function: dict[str, list[TaskPrint]] = {}
    for p in prints:
        by_function.setdefault(p.function, []).append(p)
    for group in by_function.values():
        for i, x in enumerate(group):
            for y in group[i + 1:]:
                rule = _rule(x, y)
                if rule is not None:
                    rules.setdefault(x.task_id, rule)
                    rules.setdefault(y.task_id, rule)
                    parent[root(y.task_id)] = root(x.task_id)
    groups: dict[str, list[TaskPrint]] = {}
    for p in prints:
        groups.setdefault(root(p.task_id), []).append(p)
    merges = []
    for members in groups.values():
        if len(members) < 2:
            continue
        kept = min(members, key=_rank)
        for p in sorted(members, key=_rank)[1:]:
            rule = _rule(kept, p) or rules[p.task_id]
            merges.append(Merge(task_id=p.task_id, kept=kept.task_id, rule=rule,
                                graded_by_kept=p.change == kept.change or p.change in kept.siblings))
    return sorted(merges, key=lambda m: m.task_id)


def dataset_prints(dataset: DatasetPaths) -> list[TaskPrint]:
    prints = []
    for task_id in dataset.task_ids():
        record = load_validation(dataset, task_id)
        prints.append(task_print(dataset.task(task_id), validated=bool(record and record.ok)))
    return prints


def load_report(dataset: DatasetPaths) -> DedupReport:
    path = dataset.root / DEDUP_FILE
    return DedupReport.model_validate_json(path.read_text()) if path.is_file() else DedupReport()


def merge_duplicates(dataset: DatasetPaths) -> DedupReport:
    """Merge the dataset's duplicate tasks (each group keeps one); returns and writes dedup.json.

    Each removal is a rename out of tasks/ before the delete, so a killed merge leaves a task either
    published or gone (the staging sweep removes what a kill left), and a rerun reaches the same state."""
    report = load_report(dataset)
    present = set(dataset.task_ids())
    earlier = [m for m in report.merged if m.task_id not in present]
    merges = plan_merges(dataset_prints(dataset))
    for merge in merges:
        atomic.remove_dir(dataset.task(merge.task_id).root)
        validation_path(dataset, merge.task_id).unlink(missing_ok=True)
    new = {m.task_id: m for m in earlier} | {m.task_id: m for m in merges}
    for merge in new.values():  # a task kept earlier and merged now hands its merges on
        while merge.kept in new and new[merge.kept].kept != merge.kept:
            merge.kept = new[merge.kept].kept
    report = DedupReport(merged=sorted(new.values(), key=lambda m: m.task_id))
    atomic.write_text(dataset.root / DEDUP_FILE, report.model_dump_json(indent=1) + "\n")
    return report

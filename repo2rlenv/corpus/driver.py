"""The corpus driver: hands repos to an executor in list order, publishes each finished repo's tasks, and
keeps the journal that lets a killed run continue.

Budgets. Each repo has its task limit (`limit`, per line or from the run's options), counted after its
run merged duplicates. `max_tasks` bounds the dataset: a repo is started with the budget left (the global
limit, less the distinct tasks of finished repos — a task merged into a duplicate takes no budget — and
the budgets of running ones), never more than its own limit; a repo that ends short gives the rest
back to the repos after it. Budgets are journalled when a repo starts, so a rerun gives an unfinished
repo the same one. On one worker the result does not depend on timing; on several, which repos get
budget a short repo gave back can.

A rerun of the same command keeps every finished repo (also failed ones, unless `retry_failed`) and
continues the others (each from its own run journal); a repo that finished with its whole budget used
runs again when the rerun gives it a larger one.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from repo2rlenv import atomic
from repo2rlenv.config import GenerateConfig, validate_options
from repo2rlenv.corpus.board import Board
from repo2rlenv.corpus.entries import RepoEntry
from repo2rlenv.corpus.executors import Executor
from repo2rlenv.corpus.models import CorpusRecord, CorpusSummary, CorpusTotals, RepoJob, RepoOutcome
from repo2rlenv.corpus.publish import publish_tasks, run_dir
from repo2rlenv.dataset.dedup import load_report, merge_duplicates
from repo2rlenv.dataset.manifest import write_manifest
from repo2rlenv.dataset.taskdir import DatasetPaths
from repo2rlenv.errors import ConfigError
from repo2rlenv.journal import Journal, journal_key
from repo2rlenv.pipelines.registry import get_pipeline

STATE_DIR = ".r2e-corpus"
_POLL_SEC = 0.5


@dataclass(slots=True)
class CorpusPlan:
    """The checked inputs of a corpus run."""

    base: GenerateConfig
    entries: list[RepoEntry]
    limits: dict[str, int]  # each repo's own task limit
    max_tasks: int | None = None
    retry_failed: bool = False
    configs: dict[str, GenerateConfig] = field(default_factory=dict)


def plan_corpus(base: GenerateConfig, entries: list[RepoEntry], *, max_tasks: int | None,
                retry_failed: bool = False) -> CorpusPlan:
    """Check every repo's options before anything runs (a bad line is exit 2, naming the line)."""
    if base.out.exists() and not base.out.is_dir():
        raise ConfigError(f"--out must be a directory: {base.out}")
    if max_tasks is not None and max_tasks < 1:
        raise ConfigError(f"--max-tasks must be at least 1, got {max_tasks}")
    pipeline = get_pipeline(base.pipeline)
    plan = CorpusPlan(base=base, entries=entries, limits={}, max_tasks=max_tasks, retry_failed=retry_failed)
    dataset = DatasetPaths(base.out)
    for entry in entries:
        opts = {**base.pipeline_opts, **entry.options}
        try:
            options = validate_options(pipeline.options_model, opts)
        except ConfigError as exc:
            raise ConfigError(f"{entry.where}: {exc}") from exc
        plan.limits[entry.name] = int(getattr(options, "limit", 50))
        plan.configs[entry.name] = base.model_copy(update={
            "repo": entry.spec, "ref": entry.ref, "out": run_dir(dataset, entry.name), "pipeline_opts": opts})
    return plan


# Options that cannot change a repo's tasks (as for the pipeline's own journal): a larger limit, say,
# continues the same journal.
_NOT_DECIDING = ("limit", "validate_tasks", "gate_workers")


def _deciding(opts: dict) -> dict:
    return {k: v for k, v in opts.items() if k not in _NOT_DECIDING}


def _state_key(base: GenerateConfig) -> str:
    """The run's settings that could change tasks: the journal's file name."""
    return journal_key(base.pipeline, _deciding(base.pipeline_opts), base.sandbox, base.base_image, base.llm,
                       base.llm_base_url)


def _repo_settings(config: GenerateConfig) -> str:
    """One repo's own settings (its line's options over the run's), limits aside."""
    return journal_key(config.repo, config.ref, _deciding(config.pipeline_opts))


class _Run:
    def __init__(self, plan: CorpusPlan, executor: Executor, reporter: Any):
        self.plan, self.executor, self.reporter = plan, executor, reporter
        self.dataset = DatasetPaths(plan.base.out)
        self.journal: Journal[CorpusRecord] = Journal(
            self.dataset.root / STATE_DIR / f"{_state_key(plan.base)}.jsonl", CorpusRecord, "name")
        # An earlier run's record counts only for the same options (a changed line starts that repo anew).
        self.records = {name: rec for name, rec in self.journal.load().items()
                        if name in plan.configs and rec.settings == _repo_settings(plan.configs[name])}
        self.finished: dict[str, RepoOutcome] = {}
        self.running: dict[str, int] = {}  # name → budget
        self.driver_sec = 0.0  # the driver's own work: publishing, manifest, journal
        labels = {e.name: e.spec + (f"@{e.ref}" if e.ref else "") for e in plan.entries}
        self.board = Board(reporter, [e.name for e in plan.entries], labels)

    # --- budgets ---------------------------------------------------------------------------------

    def budget(self, name: str) -> int:
        own = self.plan.limits[name]
        if self.plan.max_tasks is None:
            return own
        # A finished repo's tasks merged into duplicates take no budget: the repos after it refill them.
        used = sum(self.distinct(o) for o in self.finished.values()) + sum(self.running.values())
        return max(0, min(own, self.plan.max_tasks - used))

    def kept(self, entry: RepoEntry) -> RepoOutcome | None:
        """The outcome an earlier run recorded, when this run keeps it."""
        rec = self.records.get(entry.name)
        if rec is None or rec.outcome is None:
            return None
        out = rec.outcome
        if out.status == "failed" and self.plan.retry_failed:
            return None
        if out.status == "done" and out.limit is not None and self.distinct(out) >= out.limit \
                and self.budget(entry.name) > out.limit:
            return None  # it used its whole budget and may give more
        return out

    # --- the loop --------------------------------------------------------------------------------

    def start(self, entry: RepoEntry) -> bool:
        """Hand `entry` to the executor; False when no budget is left for it."""
        rec = self.records.get(entry.name)
        limit = rec.limit if rec is not None and rec.outcome is None else self.budget(entry.name)
        if limit <= 0:
            return False
        config = self.plan.configs[entry.name]
        self.journal.append(CorpusRecord(name=entry.name, limit=limit, settings=_repo_settings(config)))
        config = config.model_copy(update={"pipeline_opts": {**config.pipeline_opts, "limit": limit}})
        self.running[entry.name] = limit
        self.board.update([(entry.name, "starting", f"budget {limit} tasks")])
        self.executor.submit(RepoJob(name=entry.name, config=config), limit)
        return True

    def finish(self, outcome: RepoOutcome) -> None:
        began = time.monotonic()
        self.running.pop(outcome.name, None)
        run = run_dir(self.dataset, outcome.name)
        published = publish_tasks(self.dataset, run, outcome.emitted)
        # The repo's own run merged some of its tasks already (they are in its dedup.json, not its tasks/).
        missing = sorted(set(outcome.emitted) - set(published) - set(load_report(DatasetPaths(run)).by_task))
        if missing:
            outcome = outcome.model_copy(update={"emitted": published,
                                                 "error": f"tasks missing from the run folder: {missing}"})
        # Duplicates across and within repos are merged as tasks arrive; the choice of which one stays
        # does not depend on arrival order, so any order of finishing ends in the same dataset.
        merge_duplicates(self.dataset)
        write_manifest(self.dataset)
        self.journal.append(CorpusRecord(name=outcome.name, limit=outcome.limit or 0, outcome=outcome,
                                         settings=_repo_settings(self.plan.configs[outcome.name])))
        self.finished[outcome.name] = outcome
        self.board.ended(outcome)
        self.driver_sec += time.monotonic() - began
        self.write_summary()

    def run(self) -> CorpusSummary:
        pending: deque[RepoEntry] = deque()
        for entry in self.plan.entries:
            out = self.kept(entry)
            if out is not None:
                self.finished[entry.name] = out
                self.board.ended(out, kept=True)
            else:
                pending.append(entry)
        while pending or self.running:
            while pending and len(self.running) < self.executor.slots:
                if not self.start(pending[0]):
                    break
                pending.popleft()
            if not self.running:
                break  # the rest have no budget and nothing running can give any back
            finished = self.executor.poll(_POLL_SEC)
            # A repo's events were posted before its outcome: show them first.
            self.board.update(self.executor.events())
            for done in finished:
                self.finish(done.outcome)
        for entry in pending:
            self.finished[entry.name] = RepoOutcome(
                name=entry.name, repo=entry.spec, ref=entry.ref, status="not_run", stage_reached="not started",
                limit=0, error=f"--max-tasks {self.plan.max_tasks} was reached before this repo started")
            self.board.ended(self.finished[entry.name])
        write_manifest(self.dataset)
        return self.write_summary()

    def distinct(self, outcome: RepoOutcome) -> int:
        """The repo's tasks still in the dataset: emitted, less those merged (by its run or across repos)."""
        return len(outcome.emitted) - len(self.merged_of(outcome))

    def merged_of(self, outcome: RepoOutcome) -> dict[str, str]:
        """The repo's tasks merged into a duplicate (by its own run, or across the dataset) → the id kept."""
        merges = {**load_report(DatasetPaths(run_dir(self.dataset, outcome.name))).by_task,
                  **load_report(self.dataset).by_task}
        out = {}
        for task_id in outcome.emitted:
            if task_id in merges:
                kept = merges[task_id].kept
                while kept in merges and merges[kept].kept != kept:  # kept by the run, merged by the dataset
                    kept = merges[kept].kept
                out[task_id] = kept
        return out

    def write_summary(self) -> CorpusSummary:
        outcomes = [self.finished[e.name] for e in self.plan.entries if e.name in self.finished]
        outcomes = [o.model_copy(update={"merged": self.merged_of(o)}) for o in outcomes]
        summary = CorpusSummary(
            executor=self.executor.name, max_tasks=self.plan.max_tasks, driver_sec=round(self.driver_sec, 3),
            totals=CorpusTotals(repos=len(self.plan.entries),
                                done=sum(o.status == "done" for o in outcomes),
                                failed=sum(o.status == "failed" for o in outcomes),
                                not_run=sum(o.status == "not_run" for o in outcomes),
                                emitted=sum(len(o.emitted) for o in outcomes),
                                merged=sum(len(o.merged) for o in outcomes)),
            repos=outcomes)
        atomic.write_text(self.dataset.summary, summary.model_dump_json(indent=2) + "\n")
        return summary


def run_corpus(plan: CorpusPlan, make_executor: Callable[[Path], Executor], reporter: Any) -> CorpusSummary:
    """Run every repo of `plan` into one dataset; returns (and writes) its summary."""
    root = plan.base.out
    # The executor first: a cluster that cannot run repos is refused before anything is written.
    executor = make_executor(root)
    root.mkdir(parents=True, exist_ok=True)
    atomic.sweep_staging(root)
    run = _Run(plan, executor, reporter)
    try:
        summary = run.run()
    finally:
        run.board.close()
        executor.close()
    rows = [[o.repo + (f"@{o.ref}" if o.ref else ""), o.status, o.stage_reached, len(o.emitted),
             o.error or o.advice or ""] for o in summary.repos]
    reporter.table("corpus", ["repo", "status", "stage reached", "tasks", "cause / advice"], rows)
    t = summary.totals
    merged = f", {t.merged} merged into duplicates (dedup.json)" if t.merged else ""
    reporter.info(f"{t.emitted - t.merged} tasks from {t.done} of {t.repos} repos ({t.failed} failed, "
                  f"{t.not_run} not run{merged}) in {root}")
    return summary

"""Audit a dataset: every task's checks, the duplicates, the tables; audit.json and browser.html."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from repo2rlenv import atomic
from repo2rlenv.audit import files
from repo2rlenv.audit.browser import BROWSER_FILE, render_browser
from repo2rlenv.audit.models import AuditReport, Check, TaskEntry
from repo2rlenv.dataset.dedup import dataset_prints, plan_merges
from repo2rlenv.dataset.manifest import load_validation
from repo2rlenv.dataset.taskdir import DatasetPaths, TaskPaths
from repo2rlenv.errors import ConfigError

AUDIT_FILE = "audit.json"
# The tables of the stats section: name → the entry's field it counts.
STATS = {"repo": "repo", "kind": "kind", "strategy": "strategy", "difficulty": "difficulty",
         "oracle kind": "oracle_kind", "oracle inputs": "oracle_inputs", "validation": "validation"}


def _entry(dataset: DatasetPaths, task: TaskPaths) -> tuple[TaskEntry, files.Hidden, dict]:
    toml, meta, config = files.read_task(task)
    record = load_validation(dataset, task.root.name)
    entry = TaskEntry(
        task_id=task.root.name, repo=toml.metadata.repo2env.repo, function=meta.touched_function,
        strategy=meta.strategy, kind=meta.operator or ("commit" if meta.commit else meta.strategy),
        difficulty=toml.metadata.difficulty, oracle_kind=meta.oracle_kind,
        oracle_inputs=meta.oracle_inputs, siblings=meta.siblings,
        coverage_targets=len(config.get("coverage_targets", [])),
        validation="not validated" if record is None else "ok" if record.ok else "failed")
    hidden = files.hidden_of(task, meta.test_path)
    entry.checks += [files.check_instruction(task, meta, config, hidden), files.check_environment(task, hidden),
                     files.check_network(meta, toml)]
    return entry, hidden, config


def _stats(entries: list[TaskEntry]) -> dict[str, dict[str, int]]:
    tables = {}
    for name, attr in STATS.items():
        counts = Counter(str(getattr(e, attr)) for e in entries)
        tables[name] = dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    tables["coverage targets"] = {"function fully covered by the suite": sum(e.coverage_targets == 0 for e in entries),
                                  "lines left for the submission": sum(e.coverage_targets > 0 for e in entries)}
    return tables


def audit_dataset(root: Path, *, images: bool, reporter: Any, client: Any = None) -> AuditReport:
    """Audit every task of the dataset at `root`; writes audit.json and browser.html there."""
    dataset = DatasetPaths(root)
    task_ids = dataset.task_ids()
    if not task_ids:
        raise ConfigError(f"{root} holds no tasks (expected {dataset.tasks}/<task_id>/task.toml)")
    if images and client is None:
        from repo2rlenv.sandbox.docker import docker_client

        client = docker_client()
    entries = []
    with reporter.progress("auditing tasks", total=len(task_ids)) as tick:
        for task_id in task_ids:
            task = dataset.task(task_id)
            entry, hidden, config = _entry(dataset, task)
            if images:
                from repo2rlenv.audit.image import check_image

                target = config["target_file"]
                manifest = json.loads(task.workspace_manifest.read_text())["files"]
                entry.checks += check_image(client, task, hidden, target, manifest.get(target, ""))
            else:
                entry.checks += [Check(name=n, verdict="skipped", found=["--no-images"]) for n in ("image", "history")]
            entries.append(entry)
            tick(f"{task_id}: {len(entry.problems)} problems")
    report = AuditReport(dataset=str(root), images_checked=images, tasks=entries,
                         duplicates=plan_merges(dataset_prints(dataset)), stats=_stats(entries))
    atomic.write_text(root / AUDIT_FILE, report.model_dump_json(indent=1) + "\n")
    atomic.write_text(root / BROWSER_FILE, render_browser(report, dataset))
    return report

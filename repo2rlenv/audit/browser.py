"""browser.html: a static page to browse a dataset — filters by repo, kind, difficulty and checks; per
task its instruction, its oracle and, behind a reveal, the hidden change.

The page is one file with its data inline as JSON, so it can be opened from disk or published beside
the dataset; it fetches nothing. The hidden diffs are in it: it is for the dataset's builders, not for
agents (never ship it inside a task).
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from string import Template

from repo2rlenv.audit.models import AuditReport
from repo2rlenv.dataset.taskdir import DatasetPaths

BROWSER_FILE = "browser.html"


def _page_json(data: dict) -> str:
    # Inside <script>, "</" would end the element and "<!--" open a comment: escape "<" everywhere.
    return json.dumps(data, ensure_ascii=False).replace("<", "\\u003c")


def page_data(report: AuditReport, dataset: DatasetPaths) -> dict:
    from repo2rlenv.audit.files import read_task

    tasks = []
    for entry in report.tasks:
        task = dataset.task(entry.task_id)
        _, meta, _ = read_task(task)
        diffs = [task.broken_patch.read_text()]
        if task.siblings.is_dir():
            diffs += [f"# sibling {p.stem}\n{p.read_text()}" for p in sorted(task.siblings.glob("*.diff"))]
        oracle = task.solution / Path(meta.test_path).name
        tasks.append({
            **entry.model_dump(include={"task_id", "repo", "function", "kind", "difficulty", "oracle_kind",
                                        "siblings", "validation", "strategy"}),
            "problems": [f"{c.name}: {f}" for c in entry.problems for f in c.found],
            "instruction": task.instruction.read_text(),
            "oracle": oracle.read_text() if oracle.is_file() else "",
            "diff": "\n".join(diffs),
        })
    subtitle = (f"{len(tasks)} tasks; {report.problem_count} problems found; "
                f"{len(report.duplicates)} duplicates; images {'checked' if report.images_checked else 'not checked'}")
    return {"subtitle": subtitle, "stats": report.stats, "tasks": tasks,
            "duplicates": [m.model_dump() for m in report.duplicates]}


def render_browser(report: AuditReport, dataset: DatasetPaths) -> str:
    template = Template(resources.files("repo2rlenv.audit").joinpath("templates/browser.html").read_text())
    title = f"Dataset browser: {dataset.root.name}"
    return template.substitute(title=title.replace("&", "&amp;").replace("<", "&lt;"),
                               data=_page_json(page_data(report, dataset)))

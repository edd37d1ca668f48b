"""Reading saved diff-mode reports: `solve history` (the reports under a directory) and `solve compare`
(two reports side by side, as one self-contained page)."""

from __future__ import annotations

import html
import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from repo2rlenv import atomic
from repo2rlenv.solver.errors import SolverInputError
from repo2rlenv.solver.report import DiffReport, load_report


class HistoryRow(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str = Field(description="The report's directory, relative to the root.")
    created: str
    repo: str
    base: str | None
    status: str
    functions: int
    solved: int
    recheck: str = Field(description="passed, failed or not rechecked.")


class History(BaseModel):
    model_config = ConfigDict(extra="forbid")

    root: str
    max_depth: int
    reports: list[HistoryRow] = Field(default_factory=list)
    problems: list[str] = Field(default_factory=list, description="report.json files that could not be read.")

    @property
    def complete(self) -> bool:
        return not self.problems


def _row(root: Path, path: Path, report: DiffReport) -> HistoryRow:
    recheck = "not rechecked" if report.recheck is None else "passed" if report.recheck.passed else "failed"
    return HistoryRow(path=path.parent.relative_to(root).as_posix() or ".", created=report.created, repo=report.repo,
                      base=report.base, status=report.status, functions=len(report.functions),
                      solved=sum(f.in_patch for f in report.functions), recheck=recheck)


def read_history(root: Path, *, max_depth: int = 3, status: str | None = None) -> History:
    """Every report.json under `root`, at most `max_depth` directories down, newest first; an unreadable
    one is a problem, not a stop. Directories are walked without following links."""
    if not root.is_dir():
        raise SolverInputError(f"--root must be a directory: {root}")
    if max_depth < 0:
        raise SolverInputError(f"--max-depth must be 0 or more, got {max_depth}")
    history = History(root=str(root), max_depth=max_depth)
    base_depth = len(root.parts)
    for here, dirs, files in os.walk(root, followlinks=False):
        depth = len(Path(here).parts) - base_depth
        if depth >= max_depth:
            dirs[:] = []
        dirs.sort()
        if "report.json" not in files:
            continue
        path = Path(here) / "report.json"
        try:
            report = load_report(path)
        except ValueError as exc:
            history.problems.append(str(exc))
            continue
        if status is None or report.status == status:
            history.reports.append(_row(root, path, report))
    history.reports.sort(key=lambda r: (r.created, r.path), reverse=True)
    return history


def _cells(values: list[str]) -> str:
    return "".join(f"<td>{html.escape(v)}</td>" for v in values)


def compare_page(before: DiffReport, after: DiffReport) -> str:
    """One self-contained page (no script, nothing fetched, text escaped): function by function, what each
    report says, and which test files appeared or went."""
    b = {f.function: f for f in before.functions}
    a = {f.function: f for f in after.functions}
    rows = []
    for name in sorted(set(b) | set(a)):
        old, new = b.get(name), a.get(name)
        def state(f):
            return "absent" if f is None else ("in patch" if f.in_patch else f.stop_reason)
        change = "same" if state(old) == state(new) else "changed"
        rows.append(f'<tr class="{change}">' + _cells([name, state(old), state(new), change]) + "</tr>")
    added = sorted(set(after.files) - set(before.files))
    removed = sorted(set(before.files) - set(after.files))
    changed = sorted(p for p in set(before.files) & set(after.files) if before.files[p] != after.files[p])

    def listing(items: list[str]) -> str:
        return "<ul>" + "".join(f"<li>{html.escape(i)}</li>" for i in items) + "</ul>" if items else "<p>none</p>"

    def head(r: DiffReport) -> str:
        return html.escape(f"{r.repo} · {r.status} · {r.created}")

    return f"""<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>Comparing two diff-mode reports</title>
<style>body {{ font-family: system-ui, sans-serif; margin: 2em; }} table {{ border-collapse: collapse; }}
th, td {{ border: 1px solid #d0d7de; padding: 0.3em 0.6em; text-align: left; }} tr.changed td {{ background: #fff8c5; }}</style>
</head>
<body>
<h1>Comparing two diff-mode reports</h1>
<p>before: <span id="before">{head(before)}</span><br>after: <span id="after">{head(after)}</span></p>
<table id="functions"><tr><th>function</th><th>before</th><th>after</th><th></th></tr>
{chr(10).join(rows)}
</table>
<h2>Test files added</h2>{listing(added)}
<h2>Test files removed</h2>{listing(removed)}
<h2>Test files changed</h2>{listing(changed)}
</body>
</html>
"""


def write_compare(before: Path, after: Path, out: Path) -> str:
    old, new = load_report(before), load_report(after)
    page = compare_page(old, new)
    atomic.write_text(out, page)
    return page

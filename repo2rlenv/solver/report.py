"""Diff mode's reports: report.json (the record `recheck`, `regression`, `compare` and `history` read),
report.md and report.html, written together into `--out`.

All three are rendered before any is written, then each replaces its old file by a rename: a failure
while rendering leaves the previous reports whole, and a reader never sees half a file.
"""

from __future__ import annotations

import html
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path
from string import Template
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from repo2rlenv import atomic
from repo2rlenv.pagekit import data_url

if TYPE_CHECKING:
    from repo2rlenv.solver.config import SolverConfig
    from repo2rlenv.solver.diff_mode import DiffSolve

# History: 1 = first version.
REPORT_SCHEMA_VERSION = 1
REPORT_FILES = ("report.json", "report.md", "report.html")

Status = Literal["complete", "partial", "none"]


class FunctionRow(BaseModel):
    model_config = ConfigDict(extra="forbid")

    function: str = Field(description="path::qualname")
    stop_reason: str
    rounds: int
    in_patch: bool
    test_files: list[str] = Field(default_factory=list, description="The test files its solve wrote.")
    verdict: str | None = Field(None, description="The reason given with VERDICT: CODE_BUG.")
    last_run: str = Field("", description="The summary of its last test run.")


class CaseResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    nodeid: str
    outcome: str = Field(description="passed, failed, error, skipped, timeout or collection_error")


class Recheck(BaseModel):
    """A model-free rerun of the report's test files (`solve recheck`)."""

    model_config = ConfigDict(extra="forbid")

    at: str
    passed: bool
    cases: list[CaseResult] = Field(default_factory=list)
    note: str = ""


class DiffReport(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: int = REPORT_SCHEMA_VERSION
    kind: Literal["diff"] = "diff"
    created: str = Field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))
    repo: str = Field(description="The repository's directory, as given.")
    base: str | None = Field(None, description="--git-base, when the diff came from git.")
    diff: str = Field(description="The diff the run tested.")
    model: str
    settings: dict = Field(default_factory=dict, description="pytest_k, pytest_m, coverage, test_timeout_sec, "
                                                              "max_rounds: what reruns must repeat.")
    unverified: list[str] = Field(default_factory=list)
    functions: list[FunctionRow] = Field(default_factory=list)
    skipped: list[str] = Field(default_factory=list)
    files: dict[str, str] = Field(default_factory=dict, description="The patch's test files: path → text.")
    patch: str = ""
    recheck: Recheck | None = None

    @property
    def status(self) -> Status:
        solved = sum(f.in_patch for f in self.functions)
        return "none" if solved == 0 else "complete" if solved == len(self.functions) else "partial"


def build_report(repo: Path, base: str | None, diff: str, config: "SolverConfig", result: "DiffSolve") -> DiffReport:
    """The report of one diff-mode run."""
    from repo2rlenv.solver.target import is_test_file

    rows = [FunctionRow(function=f.target.key, stop_reason=f.solve.stop_reason.value,
                        rounds=f.solve.rounds, in_patch=f.in_patch,
                        test_files=sorted(p for p in f.solve.files if is_test_file(p)),
                        verdict=f.solve.verdict, last_run=f.solve.last_report.summary() if f.solve.last_report else "")
            for f in result.functions]
    files = {p: t for f in result.functions if f.in_patch for p, t in f.solve.files.items() if is_test_file(p)}
    settings = config.model_dump(include={"pytest_k", "pytest_m", "coverage", "test_timeout_sec", "max_rounds"})
    return DiffReport(repo=str(repo), base=base, diff=diff, model=config.model, settings=settings,
                      unverified=config.unverified(), functions=rows, skipped=result.skipped, files=files,
                      patch=result.patch)


def load_report(path: Path) -> DiffReport:
    """A saved report (a report.json or the directory holding one); ValueError naming what is wrong."""
    file = path / "report.json" if path.is_dir() else path
    try:
        return DiffReport.model_validate_json(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"no report.json at {path}") from None
    except (OSError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ValueError(f"{file} is not a diff-mode report: {first}") from None


def render_markdown(report: DiffReport) -> str:
    lines = [f"# Tests for a diff of {report.repo}", "",
             f"Status: **{report.status}** ({sum(f.in_patch for f in report.functions)} of {len(report.functions)} "
             f"functions with passing tests). Model: `{report.model}`. Created {report.created}.", ""]
    if report.base:
        lines += [f"Diff: `git diff {report.base}`.", ""]
    lines += ["| function | stop | rounds | in patch | last run |", "|---|---|---|---|---|"]
    for f in report.functions:
        cells = [f.function, f.stop_reason, str(f.rounds), "yes" if f.in_patch else "no", f.last_run]
        lines.append("| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |")
    for f in report.functions:
        if f.verdict:
            lines += ["", f"VERDICT: CODE_BUG in `{f.function}`: {f.verdict}"]
    if report.unverified:
        lines += ["", "Not verified:", *[f"- {u}" for u in report.unverified]]
    if report.skipped:
        lines += ["", "Skipped:", *[f"- {s}" for s in report.skipped]]
    if report.recheck:
        lines += ["", f"Recheck ({report.recheck.at}): {'passed' if report.recheck.passed else 'FAILED'}"
                  + (f" — {report.recheck.note}" if report.recheck.note else "")]
        lines += [f"- `{c.nodeid}`: {c.outcome}" for c in report.recheck.cases]
    fence = "~~~~"  # a test file may hold ``` itself
    for path, text in sorted(report.files.items()):
        lines += ["", f"## {path}", "", f"{fence}python", text.rstrip("\n"), fence]
    lines += ["", "## Patch", "", f"{fence}diff", report.patch.rstrip("\n"), fence, ""]
    return "\n".join(lines)


def _rows(report: DiffReport) -> str:
    out = []
    for f in report.functions:
        cells = [f.function, f.stop_reason, str(f.rounds), "yes" if f.in_patch else "no", f.last_run]
        css = "solved" if f.in_patch else "unsolved"
        out.append(f'<tr class="{css}">' + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
    return "\n".join(out)


def _list(items: list[str]) -> str:
    return "<ul>" + "".join(f"<li>{html.escape(i)}</li>" for i in items) + "</ul>" if items else "<p>none</p>"


def render_html(report: DiffReport, report_json: str) -> str:
    """A self-contained page: no script, nothing fetched; every text escaped (shown literally); the patch
    and report.json as `data:` downloads holding their exact bytes."""
    template = Template(resources.files("repo2rlenv.solver").joinpath("templates", "diff_report.html")
                        .read_text(encoding="utf-8"))
    files = "\n".join(f"<h3>{html.escape(p)}</h3>\n<pre>{html.escape(t)}</pre>" for p, t in sorted(report.files.items()))
    verdicts = [f"{f.function}: {f.verdict}" for f in report.functions if f.verdict]
    recheck = "<p>not rechecked</p>"
    if report.recheck:
        r = report.recheck
        recheck = (f"<p>{html.escape(r.at)}: <strong>{'passed' if r.passed else 'FAILED'}</strong> "
                   f"{html.escape(r.note)}</p>" + _list([f"{c.nodeid}: {c.outcome}" for c in r.cases]))
    return template.substitute(
        title=html.escape(f"Tests for a diff of {report.repo}"), status=html.escape(report.status),
        model=html.escape(report.model), created=html.escape(report.created),
        base=html.escape(f"git diff {report.base}" if report.base else "a diff file"),
        rows=_rows(report), verdicts=_list(verdicts), unverified=_list(report.unverified),
        skipped=_list(report.skipped), recheck=recheck, files=files or "<p>no test files</p>",
        patch=html.escape(report.patch), diff=html.escape(report.diff),
        patch_url=data_url(report.patch.encode("utf-8"), ".diff"),
        json_url=data_url(report_json.encode("utf-8"), ".json"))


def write_reports(out: Path, report: DiffReport) -> None:
    """report.json, report.md and report.html into `out`, all rendered before any is replaced."""
    text = report.model_dump_json(indent=2) + "\n"
    rendered = {"report.json": text, "report.md": render_markdown(report), "report.html": render_html(report, text)}
    out.mkdir(parents=True, exist_ok=True)
    for name in REPORT_FILES:
        atomic.write_text(out / name, rendered[name])

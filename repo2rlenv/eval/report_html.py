"""report.html: one self-contained page — totals, a row per task, each task's final tests, downloads.

Nothing is fetched when the page opens: styles are inline and every download link is a `data:` URL with
the artifact's exact bytes (results.json, results.md, and per task the tests, trajectory and ledger), so
the file can be mailed or archived on its own.
"""

from __future__ import annotations

import html
from importlib import resources
from pathlib import Path
from string import Template

from repo2rlenv.pagekit import data_url
from repo2rlenv.eval.formatting import coverage_gain, finished_text, not_run_reason, num, rate, reward_text, usd
from repo2rlenv.eval.results import EvalResults, TaskRecord

def _link(root: Path, rel: str, label: str) -> str:
    path = root / rel
    if not path.is_file():
        return ""
    return (f'<li><a class="download" download="{html.escape(path.name)}" data-path="{html.escape(rel)}" '
            f'href="{data_url(path.read_bytes(), path.suffix)}">{html.escape(label)}</a></li>')


def _cell(text: object, cls: str = "") -> str:
    attr = f' class="{cls}"' if cls else ""
    return f"<td{attr}>{html.escape(str(text))}</td>"


def _task_row(r: TaskRecord) -> str:
    g = r.grade
    reward = reward_text(r)
    cells = [_cell(r.run_id), _cell(reward, "num reward"), _cell(num(g.b_pass if g else None), "num"),
             _cell(num(g.b_fail if g else None), "num"), _cell(num(g.cov if g else None), "num"),
             _cell(r.outcome), _cell(r.rounds, "num"),
             _cell(r.prompt_tokens + r.completion_tokens, "num"), _cell(usd(r.cost_usd, r.unpriced_calls), "num"),
             _cell(r.last_tests or r.error or "-")]
    state = "unfinished" if r.unfinished else "solved" if r.solved else "unsolved"
    return f'<tr class="{state}" data-task="{html.escape(r.run_id)}">{"".join(cells)}</tr>'


def _task_detail(r: TaskRecord) -> str:
    g = r.grade
    why = f"<p>Verifier: {html.escape(g.reason)}</p>" if g and g.reason else ""
    stop = f"<p>Stopped: {html.escape(r.outcome)}. {html.escape(r.stop_detail or r.error or '')}</p>"
    body = (f"<pre>{html.escape(r.final_tests)}</pre>" if r.final_tests is not None
            else "<p class=\"muted\">No test file was written.</p>")
    title = f"{r.run_id} — {r.test_path or ''}"
    return f"<details><summary>{html.escape(title)}</summary>{stop}{why}{body}</details>"


def _downloads(results: EvalResults, root: Path) -> str:
    links = [_link(root, "results.json", "results.json"), _link(root, "results.md", "results.md")]
    for r in results.tasks:
        for name in ("tests", "trajectory", "ledger"):
            if name in r.artifacts:
                links.append(_link(root, r.artifacts[name], f"{r.run_id}: {name} ({Path(r.artifacts[name]).name})"))
    return "\n".join(link for link in links if link)


def render_html(results: EvalResults, root: Path) -> str:
    """The page for `results`; artifacts are read from the eval dir `root` (results.json must exist)."""
    template = Template(resources.files("repo2rlenv.eval").joinpath("templates", "report.html").read_text(encoding="utf-8"))
    t = results.totals
    solver = results.settings.solver
    not_run = (f'<p id="not-run">Not run ({html.escape(not_run_reason(results))}): '
               f'{html.escape(", ".join(results.not_run))}</p>' if results.not_run else "")
    return template.substitute(
        title=html.escape(f"repo2rlenv eval: {Path(results.settings.dataset).name}"),
        subtitle=html.escape(f"{results.settings.dataset} · model {solver['model']} · at most {solver['max_rounds']} round(s)"),
        tasks=t.tasks, unfinished=t.unfinished, solved=t.solved,
        solve_rate=html.escape(f"{rate(t.solve_rate)} ({finished_text(t)})"), mean_reward=num(t.mean_reward),
        mean_coverage_gain=html.escape(coverage_gain(t.mean_coverage_gain, t.coverage_tasks)), rounds=t.rounds,
        tokens=t.prompt_tokens + t.completion_tokens, cost=html.escape(usd(t.cost_usd, t.unpriced_calls)),
        stop_reasons=html.escape(", ".join(f"{k}: {v}" for k, v in t.stop_reasons.items()) or "none"),
        not_run=not_run, task_rows="\n".join(_task_row(r) for r in results.tasks),
        task_details="\n".join(_task_detail(r) for r in results.tasks), downloads=_downloads(results, root))

"""results.md: the totals and one row per task, as GitHub-flavoured markdown tables."""

from __future__ import annotations

from repo2rlenv.eval.formatting import coverage_gain, finished_text, not_run_reason, num, rate, reward_text, usd
from repo2rlenv.eval.results import EvalResults, TaskRecord


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _row(cells: list[object]) -> str:
    return "| " + " | ".join(_cell(c) for c in cells) + " |"


def _task_row(r: TaskRecord) -> list[object]:
    g = r.grade
    reward = reward_text(r, error=f"error: {r.error or (g.reason if g else '')}")
    return [r.run_id, reward, num(g.b_pass if g else None), num(g.b_fail if g else None), num(g.cov if g else None),
            r.outcome if not r.unfinished else f"{r.outcome}: {r.stop_detail or r.error or ''}", r.rounds, r.prompt_tokens + r.completion_tokens,
            usd(r.cost_usd, r.unpriced_calls), r.last_tests or "-"]


def render_markdown(results: EvalResults) -> str:
    t = results.totals
    solver = results.settings.solver
    routing = solver.get("routing") or {}
    models = ", ".join(f"{role}={routing.get(role) or solver['model']}" for role in ("plan", "generate", "repair"))
    lines = [
        f"# repo2rlenv eval of {results.settings.dataset}", "",
        f"Models: {models}; at most {solver['max_rounds']} round(s) per task.", "",
        _row(["tasks", "unfinished", "solved (reward 1.0)", "solve rate", "mean reward", "mean coverage gain",
              "rounds", "tokens", "cost"]),
        _row(["---"] * 9),
        _row([t.tasks, t.unfinished, t.solved, f"{rate(t.solve_rate)} ({finished_text(t)})", num(t.mean_reward),
              coverage_gain(t.mean_coverage_gain, t.coverage_tasks), t.rounds, t.prompt_tokens + t.completion_tokens,
              usd(t.cost_usd, t.unpriced_calls)]),
        "",
        _row(["task", "reward", "b_pass", "b_fail", "cov", "stop", "rounds", "tokens", "cost", "solver's last run"]),
        _row(["---"] * 10),
        *(_row(_task_row(r)) for r in results.tasks),
    ]
    if results.not_run:
        lines += ["", f"Not run ({not_run_reason(results)}): {', '.join(results.not_run)}"]
    if results.settings.tries > 1:
        lines += ["", f"Difficulty over {results.settings.tries} tries per task (measured: easy ≥ 2/3 solved, "
                      "medium some, hard none; predicted: task.toml, from features):", "",
                  _row(["task", "solved", "measured", "predicted"]), _row(["---"] * 4),
                  *(_row([d.task_id, f"{d.solved}/{d.tries}", d.measured_label or "-", d.predicted_label or "-"])
                    for d in results.difficulty)]
    stops = ", ".join(f"{k} {v}" for k, v in t.stop_reasons.items())
    lines += ["", f"Stop reasons: {stops or 'none'}."]
    return "\n".join(lines) + "\n"

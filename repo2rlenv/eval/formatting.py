"""How numbers read in results.md and report.html (one place, so both say the same)."""

from __future__ import annotations


def rate(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def num(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def usd(value: float, unpriced: int = 0) -> str:
    """A cost; calls without a price are said, never shown as $0 (a priced sum of zero is not 'free')."""
    if unpriced and not value:
        return f"unpriced ({unpriced} call{'s' * (unpriced > 1)})"
    text = f"${value:.4f}"
    return f"{text} (+{unpriced} unpriced)" if unpriced else text


def reward_text(record, error: str = "error") -> str:
    """A task's reward cell: '-' for an unfinished task (no verdict), `error` when it could not run."""
    if record.unfinished:
        return "-"
    g = record.grade
    return num(g.reward) if g and g.reward is not None else error


def not_run_reason(results) -> str:
    """Why the listed tasks were not reached."""
    return f"stopped: {results.stopped}" if results.stopped else "spend ceiling reached"


def finished_text(totals) -> str:
    """'3 finished, 2 unfinished' (the part after the solve rate)."""
    unfinished = f", {totals.unfinished} unfinished" if totals.unfinished else ""
    return f"{totals.solved}/{totals.tasks - totals.unfinished} finished{unfinished}"


def coverage_gain(value: float | None, tasks: int) -> str:
    return "n/a (no task has uncovered lines)" if value is None else f"{value:.3f} over {tasks} task(s)"

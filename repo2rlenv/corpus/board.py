"""The corpus's live lines: one per repo (its stage and latest note) and a total, redrawn in place on a
terminal; elsewhere (CI logs, pipes) a plain line each time a repo enters a stage or ends."""

from __future__ import annotations

import time
from typing import Any

from repo2rlenv.corpus.models import Event, RepoOutcome


_ENDED = ("done", "failed", "not run", "kept")


class Board:
    def __init__(self, reporter: Any, names: list[str], labels: dict[str, str]):
        self._console = getattr(reporter, "_console", None)
        self._names, self._labels = names, labels
        self._stage: dict[str, str] = {n: "waiting" for n in names}
        self._note: dict[str, str] = {n: "" for n in names}
        self._tasks: dict[str, int] = {}
        self._start = time.monotonic()
        self._live: Any = None
        if self._console is not None and self._console.is_terminal:
            from rich.live import Live

            self._live = Live(self._render(), console=self._console, refresh_per_second=4, transient=False)
            self._live.start()

    def _line(self, text: str) -> None:
        if self._console is not None:
            self._console.print(text, markup=False, soft_wrap=True, highlight=False)

    def _render(self) -> Any:
        from rich.table import Table

        table = Table(show_header=False, box=None, pad_edge=False)
        table.add_column("repo", overflow="fold")
        table.add_column("stage", style="bold")
        table.add_column("note", overflow="ellipsis", no_wrap=True, max_width=70)
        for name in self._names:
            table.add_row(self._labels[name], self._stage[name], self._note[name])
        table.add_row("total", self._total(), "")
        return table

    def _total(self) -> str:
        ended = sum(1 for s in self._stage.values() if s in _ENDED)
        minutes = (time.monotonic() - self._start) / 60
        return f"{ended}/{len(self._names)} repos, {sum(self._tasks.values())} tasks, {minutes:.1f} min"

    def update(self, events: list[Event]) -> None:
        for name, stage, note in events:
            if name not in self._stage or self._stage[name] in _ENDED:
                continue  # a late event of a repo that ended (a retried Ray task's first attempt)
            changed = stage and stage != self._stage[name]
            if stage:
                self._stage[name] = stage
            self._note[name] = note
            if self._live is None and changed:
                self._line(f"[{self._labels[name]}] {stage}: {note}")
        self.refresh()

    def refresh(self) -> None:
        if self._live is not None:
            self._live.update(self._render())

    def ended(self, outcome: RepoOutcome, *, kept: bool = False) -> None:
        """A repo finished (or was finished by an earlier run, `kept`)."""
        name = outcome.name
        self._tasks[name] = len(outcome.emitted)
        stage = "kept" if kept else ("done" if outcome.status == "done" else
                                     "not run" if outcome.status == "not_run" else "failed")
        note = f"{len(outcome.emitted)} tasks" if outcome.status == "done" else (outcome.error or "")
        self._stage[name], self._note[name] = stage, note
        if self._live is None:
            self._line(f"[{self._labels[name]}] {stage}: {note} — total {self._total()}")
        self.refresh()

    def close(self) -> None:
        if self._live is not None:
            self._live.update(self._render())
            self._live.stop()
            self._live = None

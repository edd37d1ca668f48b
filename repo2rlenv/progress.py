"""Progress and messages for long runs: rich on a terminal, plain lines otherwise, silent with --json.

Library code reports through a `Reporter`; only the CLI decides where it goes.
"""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager
from typing import Any, Iterator

from rich.markup import escape


class Reporter:
    """Stage headers, status lines and per-item progress bars, written to stderr."""

    def __init__(self, *, quiet: bool = False, verbose: bool = False):
        self.quiet = quiet
        self.verbose = verbose
        # The stage running now (source, environment, baseline, mining, gates, synthesis, emit, validate):
        # a failure that does not name its own stage is reported as this one.
        self.current_stage: str | None = None
        # Wall seconds spent in each stage (issue 34: a run says where its time went).
        self.stage_seconds: dict[str, float] = {}
        self._since = time.monotonic()
        self._console: Any = None
        if not quiet:
            from rich.console import Console

            self._console = Console(stderr=True, highlight=False)

    def info(self, message: str) -> None:
        if self._console is not None:
            # soft_wrap: a message stays one line (a log path, a cause) however narrow the terminal.
            self._console.print(message, markup=False, soft_wrap=True)

    def stage(self, message: str, name: str | None = None) -> None:
        """A stage header; `name` also records which stage runs (see `current_stage`)."""
        if name is not None:
            self._switch(name)
        if self._console is not None:
            self._console.print(f"[bold]» {message}[/bold]")

    @contextmanager
    def in_stage(self, name: str) -> Iterator[None]:
        """Run a block as stage `name` (no header), then restore the stage that ran before."""
        previous = self.current_stage
        self._switch(name)
        yield  # on an exception the failing stage stays current, for the error line
        self._switch(previous)

    def _switch(self, name: str | None) -> None:
        """Charge the time since the last switch to the stage that ran, then make `name` current."""
        now = time.monotonic()
        if self.current_stage is not None:
            self.stage_seconds[self.current_stage] = self.stage_seconds.get(self.current_stage, 0.0) + now - self._since
        self._since, self.current_stage = now, name

    def seconds_by_stage(self) -> dict[str, float]:
        """`stage_seconds` with the running stage's time so far."""
        self._switch(self.current_stage)
        return {k: round(v, 1) for k, v in self.stage_seconds.items()}

    def warn(self, message: str) -> None:
        # Warnings go to stderr even in --json mode: they matter more than tidy output.
        if self._console is not None:
            self._console.print(f"[yellow]warning:[/yellow] {escape(message)}", highlight=False, soft_wrap=True)
        else:
            print(f"warning: {message}", file=sys.stderr)

    def error(self, message: str) -> None:
        """A problem line (doctor's blocking problems); the failing command's own line is the CLI's."""
        # Like warnings, errors reach stderr in --json mode too.
        if self._console is not None:
            self._console.print(f"[red]error:[/red] {escape(message)}", highlight=False, soft_wrap=True)
        else:
            print(f"error: {message}", file=sys.stderr)

    def table(self, title: str, columns: list[str], rows: list[list[Any]]) -> None:
        if self._console is None:
            return
        from rich.table import Table

        table = Table(title=title, title_justify="left")
        for col in columns:
            # Fold, never cut: ids that share a long prefix (task ids) must stay told apart at 80 columns.
            table.add_column(col, overflow="fold")
        for row in rows:
            table.add_row(*[str(c) for c in row])
        self._console.print(table)

    @contextmanager
    def progress(self, description: str, total: int | None) -> Iterator["Tick"]:
        """A progress bar; yields a callable to advance it by one with an optional note."""
        if self._console is None:
            yield Tick(None, None)
            return
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        start = time.monotonic()
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      TextColumn("{task.fields[note]}"), console=self._console, transient=False) as prog:
            task = prog.add_task(description, total=total, note="")
            yield Tick(prog, task)
        if self.verbose:
            self.info(f"{description}: {time.monotonic() - start:.1f}s")


class Tick:
    """Advances one progress bar."""

    def __init__(self, prog: Any, task: Any):
        self._prog, self._task = prog, task

    def __call__(self, note: str = "", advance: int = 1) -> None:
        if self._prog is not None:
            self._prog.update(self._task, advance=advance, note=note[:60])

    def total(self, total: int) -> None:
        if self._prog is not None:
            self._prog.update(self._task, total=total)

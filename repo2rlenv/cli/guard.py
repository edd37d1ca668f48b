"""The one error guard of every command: a failure becomes one line `error: STAGE: cause` and its exit code
(the table is `repo2rlenv.errors.FAILURES`); a stage that failed on the repo also leaves its raw output in a log.

Its own module so that the command groups of `hub/` and `solver/` share it without importing `cli` (which
imports them: a circle).
"""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path
from typing import Any, Callable

import click

from repo2rlenv.errors import Repo2RLEnvError


class Failing:
    """What a command's failure line needs: where the stage is tracked, and where its log may go."""

    def __init__(self) -> None:
        self.reporter: Any = None
        self.log_dir: Path | None = None


def fail(exc: BaseException, state: Failing | None = None) -> None:
    """One line `error: STAGE: cause`, and for a stage that failed on the repo the raw output in a log."""
    from repo2rlenv.errors import classify
    from repo2rlenv.failures import failure_line, write_log

    running = state.reporter.current_stage if state is not None and state.reporter is not None else None
    stage, code = classify(exc, running)
    if code == 2:
        # Bad input: the message is written for the user already, and nothing goes on disk.
        click.echo(f"error: {stage}: {exc}" if stage else f"error: {exc}", err=True)
        sys.exit(code)
    log = None
    if state is not None and state.log_dir is not None:
        try:
            log = write_log(exc, stage, state.log_dir)
        except OSError:
            log = None
    click.echo(failure_line(stage, exc, log), err=True)
    sys.exit(code)


def _terminate_as_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def guard(fn: Callable[..., int], state: Failing | None = None) -> None:
    """Run a command body; errors become one line and their exit code (see repo2rlenv.errors.FAILURES)."""
    # SIGTERM (a scheduler's or a script's timeout) ends a command as Ctrl-C does: what it holds is cleaned
    # up and a generate run writes its summary. A command that serves sets its own handler after this one.
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _terminate_as_interrupt)
    try:
        code = fn()
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(130)
    except (Repo2RLEnvError, Exception) as exc:  # noqa: B014 - a defect gets one line and a log, too
        fail(exc, state)
    sys.exit(code)

"""Run one repo of a corpus: the single-repo `run_generate`, into the repo's run folder, turned into an
outcome. A repo that fails is an outcome with its stage and cause (and the full output under the run
folder's logs/), never an exception that would stop the other repos."""

from __future__ import annotations

import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from repo2rlenv.corpus.models import RepoJob, RepoOutcome
from repo2rlenv.progress import Reporter, Tick

# (repo name, stage, note): where a worker's progress goes (the driver's live lines).
Post = Callable[[str, str, str], None]


class ForwardingReporter(Reporter):
    """A silent Reporter that tells `post` which stage runs and how far its progress bar got."""

    def __init__(self, name: str, post: Post):
        super().__init__(quiet=True)
        self._name, self._post = name, post

    def stage(self, message: str, name: str | None = None) -> None:
        super().stage(message, name)
        self._post(self._name, self.current_stage or "", message)

    def warn(self, message: str) -> None:
        # The run's warnings belong to the repo: its line shows the latest; the log keeps none of them.
        self._post(self._name, self.current_stage or "", f"warning: {message}")

    def error(self, message: str) -> None:
        self._post(self._name, self.current_stage or "", f"error: {message}")

    @contextmanager
    def progress(self, description: str, total: int | None) -> Iterator[Tick]:
        yield _ForwardingTick(self, description, total)


class _ForwardingTick(Tick):
    def __init__(self, reporter: ForwardingReporter, description: str, total: int | None):
        super().__init__(None, None)
        self._reporter, self._description, self._total, self._done = reporter, description, total, 0

    def __call__(self, note: str = "", advance: int = 1) -> None:
        self._done += advance
        of = f"/{self._total}" if self._total else ""
        rep = self._reporter
        rep._post(rep._name, rep.current_stage or "", f"{self._description}: {self._done}{of} {note}".rstrip())

    def total(self, total: int) -> None:
        self._total = total


def run_repo(job: RepoJob, post: Post, *, dataset_root: Path | None = None, limit: int | None = None) -> RepoOutcome:
    """Run `job` and describe how it ended. `dataset_root` makes the log path in the outcome relative."""
    from repo2rlenv.errors import classify
    from repo2rlenv.failures import failure_line, write_log
    from repo2rlenv.generate import LOGS_DIR, run_generate

    config = job.config
    reporter = ForwardingReporter(job.name, post)
    start = time.monotonic()
    common = dict(name=job.name, repo=config.repo, ref=config.ref, limit=limit)
    try:
        result = run_generate(config, reporter)
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as exc:  # noqa: BLE001 - every failure of one repo is that repo's outcome
        stage, _code = classify(exc, reporter.current_stage)
        log_path: Path | None
        try:
            log_path = write_log(exc, stage, config.out / LOGS_DIR)
        except OSError:
            log_path = None
        line = failure_line(stage, exc, None).removeprefix("error: ").removeprefix(f"{stage}: ")
        shown = log_path
        if log_path is not None and dataset_root is not None and log_path.is_relative_to(dataset_root):
            shown = log_path.relative_to(dataset_root)
        post(job.name, stage, f"failed: {line}")
        return RepoOutcome(**common, status="failed", stage_reached=stage, error=line,
                           log=str(shown) if shown is not None else None, duration_sec=time.monotonic() - start)
    advice = result.details.get("advice")
    post(job.name, "done", f"{len(result.emitted)} tasks")
    return RepoOutcome(**common, status="done", stage_reached="done", emitted=list(result.emitted),
                       funnel=dict(result.stages), skip_reasons=dict(result.skip_reasons),
                       advice=_advice_text(advice), duration_sec=time.monotonic() - start)


def _advice_text(advice: object) -> str | None:
    """The pipeline's one-line advice (`details["advice"]["line"]`) when the run came out short."""
    return str(advice.get("line")) if isinstance(advice, dict) and advice.get("line") else None

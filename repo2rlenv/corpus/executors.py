"""Where a corpus's repos run. An executor takes jobs, runs `worker.run_repo` somewhere, and hands the
driver back outcomes and progress events; the driver alone writes the dataset.

`LocalExecutor` runs one repo at a time on this machine, in a thread of the driver (the driver's own
thread keeps the live lines moving). `RayExecutor` (`executors_ray.py`) runs one Ray task per repo.
"""

from __future__ import annotations

import queue
import threading
from pathlib import Path
from typing import Protocol

from repo2rlenv.corpus.models import Event, Finished, RepoJob, RepoOutcome


class Executor(Protocol):
    name: str
    slots: int  # repos that may run at once

    def submit(self, job: RepoJob, limit: int) -> None: ...

    def poll(self, timeout: float) -> list[Finished]:
        """Jobs that ended since the last call (waiting up to `timeout` seconds for one); their run
        folders are complete under the dataset's runs/ when they are returned."""
        ...

    def events(self) -> list[Event]:
        """Progress events since the last call."""
        ...

    def close(self) -> None: ...


class LocalExecutor:
    """One repo at a time on this machine, in a worker thread; the run folder is written in place."""

    name = "local"
    slots = 1

    def __init__(self, dataset_root: Path):
        self._root = dataset_root
        self._done: queue.Queue[Finished] = queue.Queue()
        self._events: queue.Queue[Event] = queue.Queue()
        self._threads: list[threading.Thread] = []

    def submit(self, job: RepoJob, limit: int) -> None:
        from repo2rlenv.corpus.worker import run_repo

        def work() -> None:
            post = lambda name, stage, note: self._events.put((name, stage, note))  # noqa: E731
            try:
                outcome = run_repo(job, post, dataset_root=self._root, limit=limit)
            except BaseException as exc:  # a defect of run_repo itself: the driver must still hear of it
                outcome = RepoOutcome(name=job.name, repo=job.config.repo, ref=job.config.ref, status="failed",
                                      stage_reached="run", limit=limit,
                                      error=f"internal error ({type(exc).__name__}: {exc})")
            self._done.put(Finished(job, outcome))

        # A daemon thread: an interrupted driver exits without waiting for it; the repo's containers
        # are tethered to this process and go with it, and the rerun continues the repo from its journal.
        thread = threading.Thread(target=work, name=f"repo-{job.name}", daemon=True)
        self._threads.append(thread)
        thread.start()

    def poll(self, timeout: float) -> list[Finished]:
        out: list[Finished] = []
        try:
            out.append(self._done.get(timeout=timeout))
            while True:
                out.append(self._done.get_nowait())
        except queue.Empty:
            pass
        return out

    def events(self) -> list[Event]:
        out: list[Event] = []
        while True:
            try:
                out.append(self._events.get_nowait())
            except queue.Empty:
                return out

    def close(self) -> None:
        self._threads.clear()


def executor_factory(kind: str, *, address: str | None = None, workers: int | None = None):
    """A maker of the executor `kind` for a dataset root (checked now: a bad flag is exit 2 before work)."""
    from repo2rlenv.errors import ConfigError

    if kind == "local":
        if address or workers:
            raise ConfigError("--address and --workers are for --executor ray")
        return LocalExecutor
    if kind == "ray":
        if workers is not None and workers < 1:
            raise ConfigError(f"--workers must be at least 1, got {workers}")
        from repo2rlenv.corpus.executors_ray import RayExecutor, check_ray

        check_ray()
        return lambda root: RayExecutor(root, address=address, workers=workers)
    raise ConfigError(f"unknown executor {kind!r} (local or ray)")

"""Repos on a Ray cluster: one Ray task per repo, on a node that has a Docker daemon.

Nodes that can run repos declare the custom resource `repo2rlenv_docker` (its amount = repos at once on
that node); each task takes one. A task writes the repo's run folder on its own node (under the node's
cache, keyed by the driver's dataset, so a rerun that lands there continues the repo) and returns it
packed; the driver unpacks it under runs/ and publishes its tasks, so a worker lost mid-repo leaves
nothing in the dataset. Ray runs a task again when its worker or node is lost (`RETRIES` times), never
when the repo failed: that is an outcome.

Progress goes through a small actor: workers post (repo, stage, note), the driver drains it between polls.
"""

from __future__ import annotations

import importlib.util
import os
import socket
from pathlib import Path
from typing import Any

from repo2rlenv.corpus.models import Event, Finished, RepoJob, RepoOutcome
from repo2rlenv.errors import ConfigError, SandboxUnavailable

RESOURCE = "repo2rlenv_docker"
RETRIES = 2  # runs after a lost worker or node, beyond the first


def check_ray() -> None:
    if importlib.util.find_spec("ray") is None:
        raise ConfigError("--executor ray needs Ray on this machine and every worker: pip install 'ray>=2.9' "
                          "(or the repo2rlenv[ray] extra)")


def _remote_functions() -> tuple[Any, Any]:
    import ray

    @ray.remote(num_cpus=0)
    class Board:
        def __init__(self) -> None:
            self._events: list[Event] = []
            self._starts: dict[str, int] = {}

        def post(self, name: str, stage: str, note: str) -> None:
            self._events.append((name, stage, note))

        def started(self, name: str) -> int:
            self._starts[name] = self._starts.get(name, 0) + 1
            return self._starts[name]

        def drain(self) -> list[Event]:
            out, self._events = self._events, []
            return out

    @ray.remote(num_cpus=1, max_retries=RETRIES)
    def run_remote(job_json: str, limit: int, board: Any, work_key: str) -> tuple[str, bytes]:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        from repo2rlenv.corpus.publish import pack_run
        from repo2rlenv.corpus.worker import run_repo
        from repo2rlenv.sources import default_cache_dir

        job = RepoJob.model_validate_json(job_json)
        attempt = ray.get(board.started.remote(job.name))
        local = default_cache_dir() / "corpus-runs" / work_key / job.name
        job = job.model_copy(update={"config": job.config.model_copy(update={"out": local})})

        def post(name: str, stage: str, note: str) -> None:
            board.post.remote(name, stage, note)

        post(job.name, "starting", f"on {socket.gethostname()}" + (f" (attempt {attempt})" if attempt > 1 else ""))
        outcome = run_repo(job, post, dataset_root=local.parent, limit=limit)
        outcome = outcome.model_copy(update={"attempts": attempt})
        data = pack_run(local) if local.is_dir() else b""
        return outcome.model_dump_json(), data

    return Board, run_remote


class RayExecutor:
    """Repos as Ray tasks; joins `address` or starts a local cluster of `workers` repo slots."""

    name = "ray"

    def __init__(self, dataset_root: Path, *, address: str | None = None, workers: int | None = None):
        import ray

        self._ray = ray
        self._root = dataset_root.resolve()
        self._started_cluster = address is None
        if address is None:
            slots = workers or max(1, (os.cpu_count() or 2) // 2)
            # address="local": a new cluster even when another one runs on this machine (joining it with
            # num_cpus set would fail).
            ray.init(address="local", num_cpus=max(os.cpu_count() or 1, slots), resources={RESOURCE: slots},
                     include_dashboard=False, log_to_driver=False, configure_logging=False)
        else:
            ray.init(address=address, log_to_driver=False, configure_logging=False)
        available = int(ray.cluster_resources().get(RESOURCE, 0))
        if available < 1:
            self.close()
            raise SandboxUnavailable(
                f"the Ray cluster at {address} has no node offering the {RESOURCE!r} resource: start each node that "
                f"has a Docker daemon with `ray start ... --resources='{{\"{RESOURCE}\": N}}'` (N repos at once)")
        self.slots = available if workers is None or address is None else min(workers, available)
        Board, self._run_remote = _remote_functions()
        self._board = Board.remote()
        # Where workers keep run folders: per driver host and dataset, so two datasets never share one.
        from repo2rlenv.journal import journal_key

        self._work_key = journal_key(socket.gethostname(), str(self._root))
        self._refs: dict[Any, tuple[RepoJob, int]] = {}

    def submit(self, job: RepoJob, limit: int) -> None:
        ref = self._run_remote.options(resources={RESOURCE: 1}).remote(
            job.model_dump_json(), limit, self._board, self._work_key)
        self._refs[ref] = (job, limit)

    def poll(self, timeout: float) -> list[Finished]:
        if not self._refs:
            return []
        ready, _ = self._ray.wait(list(self._refs), num_returns=len(self._refs), timeout=timeout)
        return [self._collect(ref) for ref in ready]

    def _collect(self, ref: Any) -> Finished:
        from repo2rlenv.corpus.publish import run_dir, unpack_run
        from repo2rlenv.dataset.taskdir import DatasetPaths

        job, limit = self._refs.pop(ref)
        try:
            outcome_json, data = self._ray.get(ref)
        except Exception as exc:  # noqa: BLE001 - a lost worker or node, after Ray's retries
            cause = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            return Finished(job, RepoOutcome(
                name=job.name, repo=job.config.repo, ref=job.config.ref, status="failed", stage_reached="worker",
                limit=limit, attempts=RETRIES + 1,
                error=f"the Ray worker was lost {RETRIES + 1} times ({type(exc).__name__}: {cause[:200]})"))
        outcome = RepoOutcome.model_validate_json(outcome_json)
        if data:
            unpack_run(data, run_dir(DatasetPaths(self._root), job.name))
        if outcome.log:
            outcome = outcome.model_copy(update={"log": f"runs/{outcome.log}"})
        return Finished(job, outcome)

    def events(self) -> list[Event]:
        try:
            return [tuple(e) for e in self._ray.get(self._board.drain.remote(), timeout=10)]  # type: ignore[misc]
        except Exception:  # noqa: BLE001 - progress is best effort; results are not
            return []

    def close(self) -> None:
        # Stops the local cluster this run started; a cluster it joined keeps running (only the driver goes).
        if self._ray.is_initialized():
            self._ray.shutdown()

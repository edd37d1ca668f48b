"""Scoring across machines on Ray: `RayDatasetScorer`, `DatasetScorer`'s interface over a cluster's nodes.

    with RayDatasetScorer("/data/ds", address="auto") as scorer:     # or address=None: a local cluster
        scores = scorer.score_many([(task_id, source), ...])
        scores = await scorer.ascore_many([...])

One Ray actor per node that offers Docker — the nodes with the corpus's custom resource `repo2rlenv_docker`
(`ray start ... --resources='{"repo2rlenv_docker": N}'`, N scores at once there) — each a `NodeScorer`: a
`DatasetScorer` over the node's copy of the dataset, with its own warm pools and Docker image cache. The
driver (this object) routes every request itself (`routing.Router`): to a node that already holds the
task's image when one has a free slot, bounded in flight per node, blocking the caller when every node is
full. A request whose node or actor is lost is sent to another node (`retries` times); when none is left
the answer is a `Score` with `reward` None and `error` `node` — an infrastructure failure, never a 0.

Nodes that join later get an actor on the next look (every `refresh_sec`), and so does a node whose actor
died while the node lives on (it keeps its image cache). Ray is imported here only, inside the class: the
package's other commands never pay for it.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import re
import threading
import time
import warnings
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Iterable

import repo2rlenv
from repo2rlenv.errors import SandboxUnavailable, UserError
from repo2rlenv.scoring.models import Score, ScoreError
from repo2rlenv.scoring.node import NodeInfo, NodeScorer, NodeStatus
from repo2rlenv.scoring.routing import NoNode, Router
from repo2rlenv.scoring.scorer import DEFAULT_GROUP, in_groups

RETRIES = 2  # sends after a lost node or actor, beyond the first
# A local cluster's object store: requests and answers are a few kB each, Ray's floor is about 75 MB.
LOCAL_OBJECT_STORE_BYTES = 100 * 1024 * 1024


class NodeLeftOut(RuntimeWarning):
    """A node offers the resource but could not start a scorer (no dataset there, no Docker daemon)."""


class RayDatasetScorer:
    """Scores submissions for any task of a dataset, on every node of a Ray cluster that offers Docker.

    `dataset_dir`: the dataset's path on every node (each needs its own copy there). `address`: a cluster to
    join (`"auto"`, `"HOST:6379"`); None starts a local one of `local_slots` (or uses the Ray this process
    already runs, as inside a trainer). `concurrency`: scores at once per node (None: the node's resource
    amount); `queue`: requests waiting per node beyond those (None: as many as its slots)."""

    def __init__(self, dataset_dir: Path | str, *, address: str | None = None, concurrency: int | None = None,
                 queue: int | None = None, warm: int = 1, max_open_tasks: int = 8, retries: int = RETRIES,
                 local_slots: int = 2, refresh_sec: float = 30.0, start_timeout_sec: float = 300.0):
        import ray

        from repo2rlenv.corpus.executors_ray import RESOURCE

        if (concurrency is not None and concurrency < 1) or (queue is not None and queue < 0) or retries < 0:
            raise UserError("concurrency must be at least 1, queue and retries at least 0")
        self._ray = ray
        self._resource = RESOURCE
        # The nodes' path: the driver need not have the dataset, so it is not resolved against this machine.
        self.dataset_dir = str(Path(dataset_dir).absolute())
        self._per_node, self._queue, self._warm, self._max_open = concurrency, queue, warm, max_open_tasks
        self.retries = retries
        self._start_timeout = start_timeout_sec
        self._lost_errors = (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError,
                             ray.exceptions.NodeDiedError, ray.exceptions.ObjectLostError)
        self._started = False
        if not ray.is_initialized():
            self._init(address, local_slots)
        self._router = Router()
        self._lock = threading.Lock()
        self._actors: dict[str, Any] = {}  # router key -> actor handle
        self._key_of: dict[str, str] = {}  # Ray node id -> router key of its live actor
        self._hosts: dict[str, str] = {}  # router key -> host name, for messages
        self._nodes: dict[str, str] = {}  # router key -> Ray node id
        self._served: Counter[str] = Counter()  # router key -> answers it gave
        self.lost_requests = 0  # sends whose node or actor was lost under them (each one sent again while retries last)
        self._refused: dict[str, str] = {}  # Ray node id -> why it was left out (not asked again)
        self._known: set[str] = set()  # every task id a node has reported
        self._keys = itertools.count(1)
        # The async API's threads: each mostly waits on a node, so more than the cores is right.
        self._threads = ThreadPoolExecutor(max_workers=256, thread_name_prefix="r2e-ray-score")
        self._stop = threading.Event()
        self._look_lock = threading.Lock()
        self._look()
        if not self._router.nodes():
            reasons = "; ".join(self._refused.values())
            self.close()
            raise SandboxUnavailable(
                f"no Ray node can score: start each node that has Docker and the dataset at {self.dataset_dir} with "
                f"`ray start ... --resources='{{\"{RESOURCE}\": N}}'` (N scores at once)"
                + (f" ({reasons})" if reasons else ""))
        self._watcher = threading.Thread(target=self._watch, args=(refresh_sec,), name="r2e-ray-nodes", daemon=True)
        self._watcher.start()

    def _init(self, address: str | None, local_slots: int) -> None:
        quiet = {"log_to_driver": False, "configure_logging": False}
        if address is not None:
            self._ray.init(address=address, **quiet)
        else:
            # The local nodes' workers import the driver's repo2rlenv, also from a source checkout.
            source = str(Path(repo2rlenv.__file__).resolve().parent.parent)
            path = os.pathsep.join(p for p in (source, os.environ.get("PYTHONPATH", "")) if p)
            # "local": a new cluster even when one runs on this machine (None would join that one).
            self._ray.init(address="local", num_cpus=os.cpu_count() or 1,
                           resources={self._resource: max(1, local_slots)},
                           object_store_memory=LOCAL_OBJECT_STORE_BYTES, include_dashboard=False,
                           runtime_env={"env_vars": {"PYTHONPATH": path}}, **quiet)
        self._started = True

    # -- nodes ---------------------------------------------------------------------------------------------

    def _look(self) -> None:
        """Start a scorer on every live node that offers the resource and has none; forget dead nodes."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        with self._look_lock:
            offered = {n["NodeID"]: int(n["Resources"].get(self._resource, 0)) for n in self._ray.nodes()
                       if n.get("Alive") and n["Resources"].get(self._resource, 0) >= 1}
            with self._lock:
                gone = [key for node, key in self._key_of.items() if node not in offered]
                new = [node for node in offered if node not in self._key_of and node not in self._refused]
            for key in gone:
                self._lose(key)
            actor_class = _actor_class(self._ray)
            starting = {}
            for node in new:
                slots = self._per_node or offered[node]
                capacity = slots + (slots if self._queue is None else self._queue)
                # max_concurrency: the calls the driver lets in flight, plus room for info/close beside them.
                actor = actor_class.options(
                    num_cpus=0, max_restarts=0, max_concurrency=capacity + 4,
                    scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False),
                ).remote(self.dataset_dir, slots, self._warm, self._max_open)
                starting[node] = (actor, capacity, actor.info.remote())
            for node, (actor, capacity, ref) in starting.items():
                try:
                    info = NodeInfo.model_validate_json(self._ray.get(ref, timeout=self._start_timeout))
                except Exception as exc:  # noqa: BLE001 - this node is left out, the others score
                    self._ray.kill(actor, no_restart=True)
                    if getattr(exc, "_actor_init_failed", False):
                        # The scorer refused to start there (no dataset, no Docker): not asked again.
                        self._refused[node] = f"node {node[:12]}: {_cause(exc)}"
                        warnings.warn(f"scoring node left out: {self._refused[node]}", NodeLeftOut, stacklevel=2)
                    # Otherwise the node went away while its actor started (or is going): the next look
                    # tries again if it still offers the resource.
                    continue
                key = f"{info.host}:{node[:8]}#{next(self._keys)}"
                with self._lock:
                    self._actors[key], self._key_of[node], self._hosts[key] = actor, key, info.host
                    self._nodes[key] = node
                    self._known |= set(info.tasks)
                self._router.add(key, slots=info.slots, capacity=capacity, tasks=set(info.tasks),
                                 images=set(info.images))

    def _watch(self, every: float) -> None:
        while not self._stop.wait(every):
            try:
                self._look()
            except Exception:  # noqa: BLE001 - the cluster may be restarting; look again next time
                pass

    def _lose(self, key: str) -> None:
        """Stop sending to a node whose actor or node was lost; the next look starts a new actor if the node
        still offers the resource."""
        self._router.remove(key)
        with self._lock:
            actor = self._actors.pop(key, None)
            for node, k in list(self._key_of.items()):
                if k == key:
                    del self._key_of[node]
        if actor is not None:
            try:
                self._ray.kill(actor, no_restart=True)
            except Exception:  # noqa: BLE001 - already gone
                pass

    def nodes(self) -> list[NodeStatus]:
        """The scoring nodes now, with their load."""
        in_flight = self._router.in_flight()
        with self._lock:
            return [NodeStatus(key=key, node_id=self._nodes[key], host=self._hosts[key], in_flight=in_flight[key],
                               served=self._served[key]) for key in self._actors if key in in_flight]

    def actor(self, key: str) -> Any:
        """The Ray actor behind a node's key (for operators and tests: `ray.kill` it, ask its pid)."""
        with self._lock:
            return self._actors[key]

    @property
    def slots(self) -> int:
        """Scores that run at once over every node now."""
        return self._router.slots()

    @property
    def capacity(self) -> int:
        return self._router.capacity()

    # -- scoring -------------------------------------------------------------------------------------------

    def task_ids(self) -> list[str]:
        with self._lock:
            return sorted(self._known)

    def _check(self, task_id: str) -> None:
        with self._lock:
            if task_id not in self._known:
                raise UserError(f"the dataset {self.dataset_dir} has no task {task_id!r}")

    def warm_up(self, task_ids: Iterable[str] | None = None) -> None:
        """Build the tasks' images and start their pools on every node now (all tasks: None)."""
        ids = list(task_ids) if task_ids is not None else self.task_ids()
        for task_id in ids:
            self._check(task_id)
        with self._lock:
            actors = dict(self._actors)
        refs = {key: actor.warm_up.remote(ids) for key, actor in actors.items()}
        for key, ref in refs.items():
            try:
                self._ray.get(ref)
            except self._lost_errors:
                self._lose(key)
                continue
            self._router.hold(key, ids)

    def score(self, task_id: str, test_source: str | None) -> Score:
        """The task's score on some node; blocks while every node that has the task is at capacity."""
        self._check(task_id)
        return self._on_a_node(task_id, [test_source], group=False)[0]

    def score_group(self, task_id: str, sources: list[str | None]) -> list[Score]:
        """Scores of `sources` to one task, graded as a group on one node (`TaskScorer.score_group`)."""
        self._check(task_id)
        return self._on_a_node(task_id, list(sources), group=True)

    def _on_a_node(self, task_id: str, sources: list[str | None], *, group: bool) -> list[Score]:
        """Scores of `sources` from one node that has the task (one slot); a lost node's are asked again
        elsewhere, up to `retries` times."""
        start = time.monotonic()
        tried: set[str] = set()
        lost: list[str] = []
        while len(tried) <= self.retries:
            try:
                key = self._router.acquire(task_id, exclude=tried)
            except NoNode:
                break
            try:
                with self._lock:
                    actor = self._actors.get(key)
                if actor is None:  # lost between being chosen and being asked
                    tried.add(key)
                    continue
                raws = (self._ray.get(actor.score_group.remote(task_id, sources)) if group
                        else [self._ray.get(actor.score.remote(task_id, sources[0]))])
            except self._lost_errors as exc:
                tried.add(key)
                lost.append(f"{self._hosts.get(key, key)}: {_cause(exc)}")
                self._lose(key)
                with self._lock:
                    self.lost_requests += 1
                continue
            finally:
                self._router.release(key)
            with self._lock:
                self._served[key] += len(sources)
            scores = [Score.model_validate_json(raw) for raw in raws]
            if group:  # each grading's own time; a single score's is the caller's wall clock
                return scores
            return [scores[0].model_copy(update={"duration_sec": time.monotonic() - start})]
        message = ("no scoring node left that has the task" if not lost else
                   f"lost {len(lost)} scoring node(s) or worker(s): " + "; ".join(lost))
        return [Score(task_id=task_id, reward=None, error=ScoreError.node, message=message[:2000],
                      duration_sec=time.monotonic() - start) for _ in sources]

    def score_many(self, items: Iterable[tuple[str, str | None]], *, group: int = DEFAULT_GROUP) -> list[Score]:
        """Scores in the order given: each task's submissions in groups of up to `group` on one node each
        (1: each on its own), as many groups at once as the nodes accept."""
        pairs = list(items)
        for task_id, _ in pairs:
            self._check(task_id)  # unknown ids fail before anything runs
        if max(1, group) == 1:
            with ThreadPoolExecutor(max_workers=max(1, min(self.capacity or 1, len(pairs) or 1))) as workers:
                return list(workers.map(lambda pair: self.score(*pair), pairs))
        return in_groups(pairs, group, self.capacity or 1, self.score_group)

    async def ascore(self, task_id: str, test_source: str | None) -> Score:
        return await asyncio.get_running_loop().run_in_executor(self._threads, self.score, task_id, test_source)

    async def ascore_many(self, items: Iterable[tuple[str, str | None]], *, group: int = DEFAULT_GROUP) -> list[Score]:
        pairs = list(items)
        for task_id, _ in pairs:
            self._check(task_id)
        return await asyncio.get_running_loop().run_in_executor(
            self._threads, lambda: self.score_many(pairs, group=group))

    # -- tear-down -----------------------------------------------------------------------------------------

    def close(self) -> None:
        """Close every node's warm pools and end the actors; stop the local cluster this object started (a
        cluster it joined keeps running)."""
        self._stop.set()
        with self._lock:
            actors, self._actors, self._key_of = dict(self._actors), {}, {}
        for key in actors:
            self._router.remove(key)
        closing = [actor.close.remote() for actor in actors.values()]
        try:
            self._ray.get(closing, timeout=120)
        except Exception:  # noqa: BLE001 - a lost node's containers went with its actor (tethered)
            pass
        for actor in actors.values():
            try:
                self._ray.kill(actor, no_restart=True)
            except Exception:  # noqa: BLE001
                pass
        self._threads.shutdown(wait=False, cancel_futures=True)
        if self._started and self._ray.is_initialized():
            self._ray.shutdown()
            self._started = False

    def __enter__(self) -> "RayDatasetScorer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_ACTOR: Any = None


def _actor_class(ray: Any) -> Any:
    global _ACTOR
    if _ACTOR is None:
        _ACTOR = ray.remote(NodeScorer)
    return _ACTOR


def _cause(exc: BaseException) -> str:
    """One line: what went wrong on the node. Ray puts the remote traceback in the message, the exception
    that ended it last; a lost actor or node is one line on its own."""
    lines = [ln.strip() for ln in re.sub(r"\x1b\[[0-9;]*m", "", str(exc)).splitlines() if ln.strip()]
    if not lines:
        return type(exc).__name__
    return (lines[-1] if len(lines) > 1 else f"{type(exc).__name__}: {lines[0]}")[:300]

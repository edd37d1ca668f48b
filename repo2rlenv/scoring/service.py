"""The scoring service without HTTP: admission to a bounded queue, a timeout per request, metrics.

`ScoringService.score(request)` is what `POST /score` does once the body is read and authorised
(`repo2rlenv.scoring.server` does that part). Why this shape:

- **A bound the client can see.** The backend (`DatasetScorer`) blocks when all its slots are taken; a
  library caller wants that, but an HTTP client waiting minutes on an open socket cannot tell a slow
  service from a dead one. So the service admits at most `concurrency + queue` requests and answers the
  next one at once with `Busy` (429 and a Retry-After hint).
- **A timeout that does not lie about capacity.** A request that waits past `score_timeout_sec` is answered
  with a `Score` whose `reward` is None and `error` `timeout` (an infrastructure failure, never a 0), but
  its grading keeps its admission slot until the backend finishes it: the bound counts work actually
  running, not answers already sent.
"""

from __future__ import annotations

import math
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Protocol

from repo2rlenv import __version__
from repo2rlenv.errors import Repo2RLEnvError
from repo2rlenv.scoring.metrics import Metrics
from repo2rlenv.scoring.models import Score, ScoreError
from repo2rlenv.scoring.scorer import DEFAULT_CONCURRENCY
from repo2rlenv.scoring.wire import Health, ScoreRequest, ServiceMetrics


class Backend(Protocol):
    """What the service scores with: `DatasetScorer` (a Ray-backed scorer can stand in later). `score`
    raises `UserError` for a task the dataset lacks; `close` ends its warm pools."""

    def score(self, task_id: str, test_source: str | None) -> Score: ...

    def task_ids(self) -> list[str]: ...

    def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class ServiceLimits:
    # Scores running at once: give the backend the same bound, so admitted work beyond it is the queue.
    concurrency: int = DEFAULT_CONCURRENCY
    # Requests admitted to wait for a slot beyond those; a small queue keeps each admitted request's wait
    # short and tells a busy trainer to back off instead of piling up sockets.
    queue: int = 8
    # One request, waiting included: past it the answer is a timeout Score. A task's own verifier timeout
    # bounds one grading; this bounds the wait for a slot on top of it.
    score_timeout_sec: float = 900.0
    # A test file is a few kB; 1 MiB leaves room for generated files while refusing junk early.
    max_body_bytes: int = 1 << 20
    # Reading the request line, headers and body: a client that stalls mid-request loses its connection.
    read_timeout_sec: float = 30.0

    @property
    def capacity(self) -> int:
        return self.concurrency + self.queue


class ServiceError(Repo2RLEnvError):
    """A request the service answers without a score."""


class Busy(ServiceError):
    """The bounded queue is full: retry after `retry_after_sec`."""

    def __init__(self, retry_after_sec: int):
        super().__init__(f"the scoring queue is full; retry after {retry_after_sec}s")
        self.retry_after_sec = retry_after_sec


class Closing(ServiceError):
    """The service is shutting down."""


class ScoringService:
    def __init__(self, backend: Backend, limits: ServiceLimits = ServiceLimits(), metrics: Metrics | None = None):
        self.backend = backend
        self.limits = limits
        self.metrics = metrics or Metrics()
        self._admit = threading.BoundedSemaphore(limits.capacity)
        # One thread per admitted request: they mostly wait on the backend's own slots. A thread of its own
        # lets the request time out while its grading runs on.
        self._workers = ThreadPoolExecutor(max_workers=limits.capacity, thread_name_prefix="r2e-score")
        self._lock = threading.Lock()
        self._in_flight = 0
        self._closing = False
        self._task_count = len(backend.task_ids())

    # -- requests ------------------------------------------------------------------------------------------

    def score(self, request: ScoreRequest) -> Score:
        """The request's Score; raises `Busy`, `Closing`, or `UserError` for an unknown task."""
        if self._closing:
            raise Closing("the scoring service is shutting down")
        if not self._admit.acquire(blocking=False):
            self.metrics.rejected("busy")
            raise Busy(self.retry_after())
        start = time.monotonic()
        with self._lock:
            self._in_flight += 1
        try:
            future = self._workers.submit(self.backend.score, request.task_id, request.source)
        except RuntimeError:  # the executor shut down between the check above and here
            self._done(None)
            raise Closing("the scoring service is shutting down") from None
        future.add_done_callback(self._done)
        try:
            score = future.result(timeout=self.limits.score_timeout_sec)
        except FutureTimeout:
            score = Score(task_id=request.task_id, reward=None, error=ScoreError.timeout,
                          duration_sec=time.monotonic() - start,
                          message=f"no verdict within the service's request timeout "
                                  f"({self.limits.score_timeout_sec:g}s, waiting for a slot included)")
        self.metrics.scored(score, time.monotonic() - start)
        return score

    def _done(self, _future: object) -> None:
        with self._lock:
            self._in_flight -= 1
        self._admit.release()

    def retry_after(self) -> int:
        """Seconds until a slot is likely free. By Little's law the admitted requests finish at
        in_flight / latency a second, so one of them frees its slot every latency / in_flight seconds
        (the recent median latency, which already includes waiting in the queue)."""
        p50 = self.metrics.latency().p50 or 2.0  # before any score: about one grading
        return max(1, math.ceil(p50 / max(1, self.in_flight())))

    # -- state ---------------------------------------------------------------------------------------------

    def in_flight(self) -> int:
        with self._lock:
            return self._in_flight

    def queue_depth(self) -> int:
        # The backend runs `concurrency` at once, so whatever was admitted beyond that is waiting.
        return max(0, self.in_flight() - self.limits.concurrency)

    def health(self) -> Health:
        return Health(ok=not self._closing, version=__version__, tasks=self._task_count,
                      concurrency=self.limits.concurrency, queue=self.limits.queue)

    def snapshot(self) -> ServiceMetrics:
        total, failures, rejected = self.metrics.totals()
        return ServiceMetrics(uptime_sec=self.metrics.uptime(), scores_total=total,
                              scores_per_sec=self.metrics.rate(), in_flight=self.in_flight(),
                              queue_depth=self.queue_depth(), capacity=self.limits.capacity,
                              latency_sec=self.metrics.latency(), failures=failures, rejected=rejected)

    # -- shutdown ------------------------------------------------------------------------------------------

    def close(self) -> None:
        """Refuse new requests, let admitted gradings finish (each bounded by its task's verifier timeout),
        then close the backend's warm pools so no container outlives the service."""
        self._closing = True
        self._workers.shutdown(wait=True)
        self.backend.close()

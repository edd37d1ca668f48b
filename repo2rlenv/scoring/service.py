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
  running, not answers already sent. One still waiting when it times out is taken out of the queue.
- **Groups form under load, never by waiting.** `concurrency` dispatchers take the oldest waiting request
  and, with it, up to `group - 1` other waiting requests for the same task, scored together by the
  backend's `score_group` (one container, one verifier start: a GRPO group's rollouts share their task).
  An idle service starts each request at once, alone; only requests that would have waited anyway are
  grouped, so grouping adds no latency and a burst costs fewer CPU-seconds per score. A score in a group
  is the score it gets alone (`TaskScorer.score_group`).
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Protocol

from repo2rlenv import __version__
from repo2rlenv.errors import Repo2RLEnvError
from repo2rlenv.scoring.metrics import Metrics
from repo2rlenv.scoring.models import Score, ScoreError
from repo2rlenv.scoring.scorer import DEFAULT_CONCURRENCY, DEFAULT_GROUP
from repo2rlenv.scoring.wire import Health, ScoreRequest, ServiceMetrics


class Backend(Protocol):
    """What the service scores with: `DatasetScorer` or `RayDatasetScorer`. `score_group` (one source: scored
    alone) raises `UserError` for a task the dataset lacks; `close` ends its warm pools."""

    def score_group(self, task_id: str, sources: list[str | None]) -> list[Score]: ...

    def task_ids(self) -> list[str]: ...

    def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class ServiceLimits:
    # Scores running at once: give the backend the same bound, so admitted work beyond it is the queue.
    concurrency: int = DEFAULT_CONCURRENCY
    # Requests admitted to wait for a slot beyond those. Bounded, so a busy trainer is told to back off
    # instead of piling up sockets; two groups' worth, so a burst of one task's rollouts can form groups.
    queue: int = 2 * DEFAULT_GROUP
    # Waiting requests for one task scored together (1: each alone); see the module's docstring.
    group: int = DEFAULT_GROUP
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


@dataclass(eq=False)
class _Waiting:
    """An admitted request: its grading's answer arrives on `future`, set by a dispatcher."""

    task_id: str
    source: str | None
    future: Future = field(default_factory=Future)


class ScoringService:
    def __init__(self, backend: Backend, limits: ServiceLimits = ServiceLimits(), metrics: Metrics | None = None):
        self.backend = backend
        self.limits = limits
        self.metrics = metrics or Metrics()
        self._admit = threading.BoundedSemaphore(limits.capacity)
        self._lock = threading.Condition()
        self._waiting: deque[_Waiting] = deque()
        self._in_flight = 0
        self._closing = False
        self._task_count = len(backend.task_ids())
        # As many dispatchers as the backend runs scores at once: each blocks in one grading, so a request
        # the dispatchers have not taken is one the backend could not have started yet either.
        self._dispatchers = [threading.Thread(target=self._dispatch, name=f"r2e-score-{i}", daemon=True)
                             for i in range(max(1, limits.concurrency))]
        for thread in self._dispatchers:
            thread.start()

    # -- requests ------------------------------------------------------------------------------------------

    def score(self, request: ScoreRequest) -> Score:
        """The request's Score; raises `Busy`, `Closing`, or `UserError` for an unknown task."""
        if self._closing:
            raise Closing("the scoring service is shutting down")
        if not self._admit.acquire(blocking=False):
            self.metrics.rejected("busy")
            raise Busy(self.retry_after())
        start = time.monotonic()
        job = _Waiting(request.task_id, request.source)
        with self._lock:
            if self._closing:  # closed between the check above and here
                self._admit.release()
                raise Closing("the scoring service is shutting down")
            self._in_flight += 1
            self._waiting.append(job)
            self._lock.notify()
        job.future.add_done_callback(self._done)
        try:
            score = job.future.result(timeout=self.limits.score_timeout_sec)
        except FutureTimeout:
            with self._lock:  # never started: it leaves the queue; started: it keeps its slot until it ends
                dropped = job in self._waiting
                if dropped:
                    self._waiting.remove(job)
            if dropped:
                job.future.cancel()
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

    # -- dispatch ------------------------------------------------------------------------------------------

    def _dispatch(self) -> None:
        while True:
            with self._lock:
                while not self._waiting and not self._closing:
                    self._lock.wait()
                if not self._waiting:  # closing, and nothing admitted is left
                    return
                jobs = self._next_group()
            self._grade(jobs)

    def _next_group(self) -> list[_Waiting]:
        """The oldest waiting request and up to `group - 1` later ones for its task, in arrival order."""
        first = self._waiting.popleft()
        jobs, rest = [first], deque()
        for job in self._waiting:
            (jobs if job.task_id == first.task_id and len(jobs) < self.limits.group else rest).append(job)
        self._waiting = rest
        return jobs

    def _grade(self, jobs: list[_Waiting]) -> None:
        task_id = jobs[0].task_id
        try:
            scores = self.backend.score_group(task_id, [job.source for job in jobs])  # a group of one: alone
        except BaseException as exc:  # an unknown task (UserError) or a backend fault: each request hears it
            for job in jobs:
                job.future.set_exception(exc)
            return
        if len(scores) != len(jobs):  # a request left unanswered would hold its admission slot forever
            fault = RuntimeError(f"the scorer answered {len(scores)} scores for {len(jobs)} requests")
            for job in jobs:
                job.future.set_exception(fault)
            return
        self.metrics.grouped(len(jobs))
        for job, score in zip(jobs, scores):
            job.future.set_result(score)

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
        with self._lock:
            return len(self._waiting)

    def health(self) -> Health:
        return Health(ok=not self._closing, version=__version__, tasks=self._task_count,
                      concurrency=self.limits.concurrency, queue=self.limits.queue, group=self.limits.group)

    def snapshot(self) -> ServiceMetrics:
        total, failures, rejected = self.metrics.totals()
        return ServiceMetrics(uptime_sec=self.metrics.uptime(), scores_total=total,
                              scores_per_sec=self.metrics.rate(), in_flight=self.in_flight(),
                              queue_depth=self.queue_depth(), capacity=self.limits.capacity,
                              latency_sec=self.metrics.latency(), failures=failures, rejected=rejected,
                              group_sizes=self.metrics.group_sizes())

    # -- shutdown ------------------------------------------------------------------------------------------

    def close(self) -> None:
        """Refuse new requests, let admitted gradings finish (each bounded by its task's verifier timeout),
        then close the backend's warm pools so no container outlives the service."""
        with self._lock:
            self._closing = True
            self._lock.notify_all()
        for thread in self._dispatchers:
            thread.join()
        self.backend.close()

"""The service's bookkeeping without Docker: percentiles, the rate window, admission to the bounded queue and
its retry hint, the timeout's slot kept until the grading ends. The backend is a stand-in that holds each
score until the test lets it go, so "the queue is full" is a state the test sets, not a race it hopes for."""

from __future__ import annotations

import threading

import pytest

from repo2rlenv.scoring.metrics import Metrics, percentile
from repo2rlenv.scoring.models import Score, ScoreError
from repo2rlenv.scoring.service import Busy, Closing, ScoringService, ServiceLimits
from repo2rlenv.scoring.wire import ScoreRequest


@pytest.mark.parametrize("values, p, expected", [
    ([], 0.5, None),
    ([3.0], 0.5, 3.0),
    ([3.0], 0.99, 3.0),
    ([1.0, 2.0, 3.0, 4.0], 0.5, 2.0),
    ([float(i) for i in range(1, 101)], 0.99, 99.0),
    ([float(i) for i in range(1, 101)], 1.0, 100.0),
])
def test_percentile_is_nearest_rank(values, p, expected):
    assert percentile(values, p) == expected


def test_rate_counts_the_last_minute_only():
    now = [0.0]
    metrics = Metrics(clock=lambda: now[0])
    ok = Score(task_id="t", reward=1.0)
    for _ in range(30):
        metrics.scored(ok, 1.0)
    now[0] = 10.0
    assert metrics.rate() == pytest.approx(3.0)  # 30 scores over the 10 s the service has been up
    now[0] = 100.0
    assert metrics.rate() == 0.0
    metrics.scored(Score(task_id="t", reward=None, error=ScoreError.sandbox), 2.0)
    assert metrics.totals()[:2] == (31, {"sandbox": 1})


class Gated:
    """A backend whose scores wait for `release`; it bounds running scores like DatasetScorer does."""

    def __init__(self, concurrency: int):
        self.release = threading.Event()
        self.started = threading.Semaphore(0)
        self._slots = threading.BoundedSemaphore(concurrency)
        self.closed = False
        self.calls: list[tuple[str, list[str | None]]] = []  # (task, sources) of each grading, in order

    def score_group(self, task_id: str, sources: list[str | None]) -> list[Score]:
        with self._slots:
            self.calls.append((task_id, list(sources)))
            self.started.release()
            self.release.wait(30)
            return [Score(task_id=task_id, reward=1.0 if source else 0.0) for source in sources]

    def task_ids(self) -> list[str]:
        return ["t"]

    def close(self) -> None:
        self.closed = True


def test_admission_is_bounded_and_the_hint_counts_the_queue():
    backend = Gated(concurrency=1)
    metrics = Metrics()
    metrics.scored(Score(task_id="t", reward=1.0), 12.0)  # the recent median latency: 12 s
    service = ScoringService(backend, ServiceLimits(concurrency=1, queue=2), metrics)
    answers: list[Score] = []
    threads = [threading.Thread(target=lambda: answers.append(service.score(ScoreRequest(task_id="t", source="x"))))
               for _ in range(3)]
    threads[0].start()
    assert backend.started.acquire(timeout=10)  # the first is graded: the next two wait (one group, later)
    for thread in threads[1:]:
        thread.start()
    while service.in_flight() < 3:
        threading.Event().wait(0.01)
    assert service.queue_depth() == 2
    with pytest.raises(Busy) as busy:
        service.score(ScoreRequest(task_id="t", source=None))
    assert busy.value.retry_after_sec == 4  # 3 admitted, each 12 s from admission to answer: one leaves every 4 s
    backend.release.set()
    for thread in threads:
        thread.join(10)
    assert [a.reward for a in answers] == [1.0] * 3 and service.in_flight() == 0
    snapshot = service.snapshot()
    assert snapshot.rejected == {"busy": 1} and snapshot.scores_total == 4
    service.close()
    assert backend.closed
    with pytest.raises(Closing):
        service.score(ScoreRequest(task_id="t", source=None))


def test_a_timed_out_request_keeps_its_slot_until_the_grading_ends():
    backend = Gated(concurrency=1)
    service = ScoringService(backend, ServiceLimits(concurrency=1, queue=0, score_timeout_sec=0.05))
    score = service.score(ScoreRequest(task_id="t", source="x"))
    assert score.reward is None and score.error is ScoreError.timeout
    with pytest.raises(Busy):  # the grading still runs: the one slot is still taken
        service.score(ScoreRequest(task_id="t", source="x"))
    backend.release.set()
    service.close()  # waits for it
    assert service.in_flight() == 0


def _send(service: ScoringService, task_id: str, source: str | None, answers: dict) -> threading.Thread:
    """One request on its own thread, its Score (or exception) kept under `answers[source]`; returns once the
    service holds it, so requests enter in the order sent."""
    before = service.in_flight()

    def ask() -> None:
        try:
            answers[source] = service.score(ScoreRequest(task_id=task_id, source=source))
        except Exception as exc:  # noqa: BLE001 - the test reads it
            answers[source] = exc

    thread = threading.Thread(target=ask)
    thread.start()
    while service.in_flight() == before and thread.is_alive():
        threading.Event().wait(0.005)
    return thread


def test_waiting_requests_for_one_task_are_scored_together_and_an_idle_one_alone():
    """While one grading holds the only slot, requests queue up: the oldest goes next with up to group - 1
    later requests for its task, in arrival order; the others keep their turn. Every request gets its own
    file's score."""
    backend = Gated(concurrency=1)
    service = ScoringService(backend, ServiceLimits(concurrency=1, queue=8, group=3))
    answers: dict = {}
    threads = [_send(service, "t", "t0", answers)]
    assert backend.started.acquire(timeout=10)  # an idle service started it at once, alone
    threads += [_send(service, task, source, answers)
                for task, source in [("t", "t1"), ("u", "u1"), ("t", "t2"), ("t", "t3"), ("t", "t4")]]
    assert service.queue_depth() == 5
    backend.release.set()
    for thread in threads:
        thread.join(10)
    assert backend.calls == [("t", ["t0"]), ("t", ["t1", "t2", "t3"]), ("u", ["u1"]), ("t", ["t4"])]
    assert {k: (a.task_id, a.reward) for k, a in answers.items()} == {
        "t0": ("t", 1.0), "t1": ("t", 1.0), "t2": ("t", 1.0), "t3": ("t", 1.0), "t4": ("t", 1.0), "u1": ("u", 1.0)}
    snapshot = service.snapshot()
    assert snapshot.group_sizes == {"1": 3, "3": 1} and snapshot.scores_total == 6 and service.in_flight() == 0
    service.close()


def test_a_request_that_times_out_while_waiting_leaves_the_queue():
    """A running grading keeps its slot past its request's timeout; a waiting one is taken out of the queue,
    never graded, and its slot admits the next request."""
    backend = Gated(concurrency=1)
    service = ScoringService(backend, ServiceLimits(concurrency=1, queue=1, score_timeout_sec=0.3))
    answers: dict = {}
    running = _send(service, "t", "first", answers)
    assert backend.started.acquire(timeout=10)  # taken by the dispatcher before the second arrives
    waiting = _send(service, "t", "second", answers)
    running.join(10)
    waiting.join(10)
    assert answers["second"].error is ScoreError.timeout and service.in_flight() == 1
    third = _send(service, "t", "third", answers)  # admitted: the dropped request gave its slot back
    backend.release.set()
    third.join(10)
    service.close()
    assert [sources for _, sources in backend.calls] == [["first"], ["third"]]
    assert service.in_flight() == 0


def test_an_unknown_task_fails_its_own_requests_only():
    class Picky(Gated):
        def score_group(self, task_id, sources):
            if task_id != "t":
                from repo2rlenv.errors import UserError
                raise UserError(f"the dataset has no task {task_id!r}")
            return super().score_group(task_id, sources)

    backend = Picky(concurrency=1)
    backend.release.set()
    service = ScoringService(backend, ServiceLimits(concurrency=1, queue=4))
    from repo2rlenv.errors import UserError
    with pytest.raises(UserError, match="no task 'nope'"):
        service.score(ScoreRequest(task_id="nope", source="x"))
    assert service.score(ScoreRequest(task_id="t", source="x")).reward == 1.0
    assert service.in_flight() == 0
    service.close()


def test_a_burst_of_connections_is_answered_never_reset():
    """128 clients connect at once: each gets 200 or 429. (The standard library's listen backlog of 5 made
    the kernel reset connections beyond it before the server could answer them.)"""
    import http.client
    from concurrent.futures import ThreadPoolExecutor

    from repo2rlenv.scoring.server import make_server

    backend = Gated(concurrency=2)
    backend.release.set()
    server = make_server(ScoringService(backend, ServiceLimits(concurrency=2, queue=8)), "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    host, port = server.server_address[:2]
    start = threading.Barrier(128)

    def one(_: int) -> int:
        conn = http.client.HTTPConnection(host, port, timeout=60)
        start.wait()
        try:
            conn.request("POST", "/score", b'{"task_id": "t", "source": "x"}', {"Content-Type": "application/json"})
            return conn.getresponse().status
        finally:
            conn.close()

    try:
        with ThreadPoolExecutor(128) as clients:
            statuses = list(clients.map(one, range(128)))
    finally:
        server.shutdown()
        server.close()
    assert set(statuses) <= {200, 429} and 200 in statuses, statuses


def test_a_scorer_that_answers_short_fails_the_requests_and_frees_their_slots():
    class Short(Gated):
        def score_group(self, task_id, sources):
            return super().score_group(task_id, sources)[:-1]

    backend = Short(concurrency=1)
    backend.release.set()
    service = ScoringService(backend, ServiceLimits(concurrency=1, queue=1))
    with pytest.raises(RuntimeError, match="answered 0 scores for 1 requests"):
        service.score(ScoreRequest(task_id="t", source="x"))
    assert service.in_flight() == 0
    service.close()

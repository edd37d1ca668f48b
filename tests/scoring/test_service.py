"""`repo2rlenv serve` for real: the HTTP server on a loopback port in this process, a `DatasetScorer` with
Docker behind it, the generated two-task dataset. A score over HTTP is the score `DatasetScorer` gives
directly; bad requests get one line and their status; a burst past the bound gets 429s, never a wrong
reward."""

from __future__ import annotations

import http.client
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from repo2rlenv.dataset.taskdir import DatasetPaths
from repo2rlenv.scoring import DatasetScorer, Score
from repo2rlenv.scoring.server import ScoringServer, make_server
from repo2rlenv.scoring.service import ScoringService, ServiceLimits
from repo2rlenv.scoring.wire import API_VERSION, ServiceMetrics

pytestmark = pytest.mark.slow

TOKEN = "s3cret-token"
WEAK = "def test_nothing():\n    assert True\n"


class Client:
    """http.client, one connection per request: the burst needs independent sockets."""

    def __init__(self, server: ScoringServer, token: str | None = TOKEN):
        self.host, self.port = server.server_address[:2]
        self.token = token

    def request(self, method: str, path: str, body: bytes | None = None,
                headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], Any]:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=600)
        try:
            sent = {"Content-Type": "application/json", **(headers or {})}
            if self.token:
                sent.setdefault("Authorization", f"Bearer {self.token}")
            conn.request(method, path, body=body, headers=sent)
            resp = conn.getresponse()
            raw = resp.read()
            return resp.status, dict(resp.getheaders()), json.loads(raw) if raw else None
        finally:
            conn.close()

    def score(self, task_id: str, source: str | None) -> tuple[int, dict[str, str], Any]:
        return self.request("POST", "/score", json.dumps({"task_id": task_id, "source": source}).encode())


def _serve(dataset: Path, limits: ServiceLimits, token: str | None = TOKEN):
    service = ScoringService(DatasetScorer(dataset, concurrency=limits.concurrency, warm=1), limits)
    server = make_server(service, "127.0.0.1", 0, token=token)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server, thread


def _stop(server: ScoringServer, thread: threading.Thread) -> None:
    server.shutdown()
    thread.join(10)
    server.close()


@pytest.fixture(scope="module")
def served(scored_dataset):
    server, thread = _serve(scored_dataset, ServiceLimits(concurrency=2, queue=2))
    yield server
    _stop(server, thread)
    assert not server.service.backend._open, "closing the service closes every task's warm pool"


def _stable(score: Score) -> dict:
    """The score without what differs between two gradings of the same file: wall-clock figures, each run's
    timing and output tail (runs go in random order), the random uid the runs were given."""
    dump = score.model_dump(mode="json", exclude={"duration_sec"})
    if dump["details"]:
        details = dump["details"]
        details.pop("timings")
        if details.get("isolation"):
            details["isolation"].pop("uid")
        details["variants"] = sorted((r["name"], r["variant"], r["status"], r["n_cases"]) for r in details["variants"])
        details["cases"] = sorted(details["cases"], key=lambda c: c["id"])
    return dump


def _same(over_http: dict, direct: Score) -> None:
    got = Score.model_validate(over_http)  # the JSON is a Score, every field of it (extra="forbid")
    a, b = _stable(got), _stable(direct)
    differ = sorted(k for k in (a["details"] or {}) if a["details"][k] != (b["details"] or {}).get(k))
    assert a == b, ("details differ in", differ, [(a["details"][k], b["details"][k]) for k in differ][:2])


def test_scores_equal_the_dataset_scorer(served, scored_dataset, oracle_of):
    task_id = DatasetPaths(scored_dataset).task_ids()[0]
    oracle = oracle_of(scored_dataset, task_id)
    client = Client(served)
    with DatasetScorer(scored_dataset) as direct:
        for source, reward in ((oracle, 1.0), (None, 0.0), ("", 0.0), (WEAK, 0.0)):
            status, headers, body = client.score(task_id, source)
            assert status == 200 and headers["Content-Type"] == "application/json", body
            assert body["reward"] == reward and body["error"] is None
            _same(body, direct.score(task_id, source))


@pytest.mark.parametrize("body, says", [
    (b"{not json", "body is not JSON"),
    (b'{"source": "x"}', "task_id: Field required"),
    (b'{"task_id": "t"}', "source: Field required"),
    (b'{"task_id": "t", "source": null, "extra": 1}', "extra: Extra inputs are not permitted"),
    (b'[1, 2]', "Input should be a valid dictionary"),
    (b'{"task_id": "no-such-task", "source": null}', "has no task 'no-such-task'"),
    (b'{"task_id": "../tasks", "source": null}', "has no task"),
])
def test_bad_requests_get_400_and_one_line(served, body, says):
    status, _, answer = Client(served).request("POST", "/score", body)
    assert status == 400
    assert says in answer["error"] and "\n" not in answer["error"]


def test_token_paths_and_limits(served, scored_dataset):
    task_id = DatasetPaths(scored_dataset).task_ids()[0]
    assert Client(served, token=None).score(task_id, None)[0] == 401
    status, headers, answer = Client(served, token="wrong").score(task_id, None)
    assert status == 401 and headers["WWW-Authenticate"].startswith("Bearer") and "token" in answer["error"]
    assert Client(served, token=None).request("GET", "/metrics")[0] == 401
    assert Client(served, token=None).request("GET", "/health")[0] == 200, "liveness probes need no token"
    assert Client(served).request("GET", "/nowhere")[0] == 404
    assert Client(served).request("POST", "/health", b"{}")[0] == 404
    assert Client(served).request("GET", "/score")[0] == 405
    # The headers alone: the server answers 413 without reading a body of that size.
    conn = http.client.HTTPConnection(*served.server_address[:2], timeout=30)
    conn.putrequest("POST", "/score")
    conn.putheader("Authorization", f"Bearer {TOKEN}")
    conn.putheader("Content-Length", str(served.service.limits.max_body_bytes + 1))
    conn.endheaders()
    resp = conn.getresponse()
    assert resp.status == 413 and "over the limit" in json.loads(resp.read())["error"]
    conn.close()


def test_health_and_metrics(served, scored_dataset):
    status, _, health = Client(served).request("GET", "/health")
    assert status == 200
    assert health["ok"] is True and health["api_version"] == API_VERSION
    assert health["tasks"] == len(DatasetPaths(scored_dataset).task_ids())
    assert (health["concurrency"], health["queue"], health["group"]) == (2, 2, 8)
    Client(served).score(DatasetPaths(scored_dataset).task_ids()[0], None)
    status, _, metrics = Client(served).request("GET", "/metrics")
    assert status == 200
    parsed = ServiceMetrics.model_validate(metrics)
    assert parsed.scores_total >= 1 and parsed.scores_per_sec > 0
    assert parsed.latency_sec.p50 is not None and parsed.latency_sec.p99 >= parsed.latency_sec.p50
    assert parsed.capacity == 4 and parsed.in_flight == 0 and parsed.queue_depth == 0
    assert parsed.rejected.get("unauthorized", 0) >= 0 and parsed.failures == {}


def test_a_burst_past_the_bound_gets_429_and_identical_rewards(scored_dataset, oracle_of):
    """16 requests at once against concurrency 1 + queue 3: the rest are refused with a retry hint; retried
    until served, every oracle scores 1.0 and every empty submission 0.0. The waiting requests of a task were
    graded together (three waiting requests over two tasks hold two of one task), each with its own score."""
    ids = DatasetPaths(scored_dataset).task_ids()
    jobs = [(ids[i % 2], oracle_of(scored_dataset, ids[i % 2]) if i % 4 < 2 else None) for i in range(16)]
    server, thread = _serve(scored_dataset, ServiceLimits(concurrency=1, queue=3, group=4))
    try:
        client = Client(server)
        with ThreadPoolExecutor(16) as pool:
            first = list(pool.map(lambda job: client.score(*job), jobs))
        refused = [h for status, h, _ in first if status == 429]
        assert refused, "16 at once against a capacity of 4 must refuse some"
        assert all(int(h["Retry-After"]) >= 1 for h in refused)
        assert all(status in (200, 429) for status, _, _ in first)

        def until_served(job):
            while True:
                status, headers, body = client.score(*job)
                if status != 429:
                    return status, body
                time.sleep(min(int(headers["Retry-After"]), 2))

        with ThreadPoolExecutor(16) as pool:
            final = list(pool.map(until_served, jobs))
        assert [status for status, _ in final] == [200] * 16
        assert [body["reward"] for _, body in final] == [1.0 if src else 0.0 for _, src in jobs]
        metrics = ServiceMetrics.model_validate(client.request("GET", "/metrics")[2])
        assert metrics.rejected["busy"] >= len(refused) and metrics.failures == {}
        assert max(int(size) for size in metrics.group_sizes) >= 2, metrics.group_sizes
        assert sum(int(size) * n for size, n in metrics.group_sizes.items()) == metrics.scores_total
    finally:
        _stop(server, thread)


def test_a_request_past_the_timeout_has_no_reward(scored_dataset, oracle_of):
    task_id = DatasetPaths(scored_dataset).task_ids()[0]
    server, thread = _serve(scored_dataset, ServiceLimits(concurrency=1, queue=1, score_timeout_sec=0.05))
    try:
        status, _, body = Client(server).score(task_id, oracle_of(scored_dataset, task_id))
        assert status == 200
        assert body["reward"] is None and body["error"] == "timeout" and "request timeout" in body["message"]
        metrics = ServiceMetrics.model_validate(Client(server).request("GET", "/metrics")[2])
        assert metrics.failures == {"timeout": 1}
    finally:
        _stop(server, thread)  # waits for the grading still running, then closes its pool

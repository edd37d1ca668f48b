"""`RayDatasetScorer` on a real Ray cluster this module starts (a head and worker nodes as separate raylets on
this machine, each offering the `repo2rlenv_docker` resource), with real Docker: the scores are the local
scorer's, sync and async, spread over the nodes; a node killed mid-score has its requests answered by
another; a killed actor is replaced on its node; infrastructure failures stay `None`, never 0."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import threading
import time
from pathlib import Path

import pytest

from repo2rlenv.dataset.taskdir import DatasetPaths
from repo2rlenv.errors import SandboxUnavailable, UserError
from repo2rlenv.scoring import RayDatasetScorer, ScoreError
from repo2rlenv.scoring.cluster import NodeLeftOut

# Ray comes with the dev extra; under CI its absence fails the run rather than skipping these tests.
ray = __import__("ray") if os.environ.get("CI") else pytest.importorskip("ray")
from ray.cluster_utils import Cluster  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.docker]

RESOURCE = "repo2rlenv_docker"
WEAK = "def test_nothing():\n    assert True\n"
# Ray's floor for a node's object store is about 75 MB; answers are a few kB.
NODE = {"num_cpus": 1, "resources": {RESOURCE: 1}, "object_store_memory": 80 * 1024 * 1024}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def cluster(docker_ready):
    """A head and one worker node, each with one scoring slot. Tests add (and kill) nodes of their own."""
    # A port of our own: another Ray on this machine (a second test run, a trainer) may hold the default one.
    made = Cluster(initialize_head=True,
                   head_node_args={**NODE, "gcs_server_port": _free_port(), "include_dashboard": False})
    made.add_node(**NODE)
    made.wait_for_nodes()
    yield made
    made.shutdown()


def _expected(dataset: Path, oracle_of) -> list[tuple[str, str | None, float]]:
    """(task, submission, reward): the oracle scores 1.0, an empty or a weak file 0.0 (tests/scoring/
    test_scorer.py shows these are the rewards of a fresh verifier container)."""
    out = []
    for task_id in DatasetPaths(dataset).task_ids():
        out += [(task_id, oracle_of(dataset, task_id), 1.0), (task_id, None, 0.0), (task_id, WEAK, 0.0)]
    return out


def _slow(source: str) -> str:
    # Appended, so a `from __future__` import stays first; every verifier run of the file waits.
    return source + "\n\nimport time as _t\n_t.sleep(4)\n"


def _wait(check, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def test_two_nodes_give_the_local_scores_sync_and_async(cluster, scored_dataset, oracle_of):
    expected = _expected(scored_dataset, oracle_of)
    with RayDatasetScorer(scored_dataset, address=cluster.address) as scorer:
        assert len(scorer.nodes()) == 2 and scorer.slots == 2 and scorer.capacity == 4
        assert scorer.task_ids() == DatasetPaths(scored_dataset).task_ids()
        # One at a time (group=1), so both nodes get some; then in groups of a task's submissions, sync and async.
        scores = scorer.score_many([(t, s) for t, s, _ in expected], group=1)
        assert [(s.task_id, s.reward, s.error) for s in scores] == [(t, r, None) for t, _, r in expected]
        assert scores[0].details is not None and scores[0].b_pass == 1.0  # the details came across
        grouped = scorer.score_many([(t, s) for t, s, _ in expected])
        assert [(s.task_id, s.reward, s.error) for s in grouped] == [(t, r, None) for t, _, r in expected]
        assert [sorted(c.id for c in s.cases) for s in grouped] == [sorted(c.id for c in s.cases) for s in scores]
        again = asyncio.run(scorer.ascore_many([(t, s) for t, s, _ in expected]))
        assert [s.reward for s in again] == [r for _, _, r in expected]
        served = {n.node_id: n.served for n in scorer.nodes()}
        assert len(served) == 2 and all(served.values()), served  # both nodes scored
        assert all(n.in_flight == 0 for n in scorer.nodes())
        with pytest.raises(UserError, match="no task"):
            scorer.score_many([(expected[0][0], None), ("nope", None)])


def test_a_node_killed_mid_score_has_its_requests_answered_elsewhere(cluster, scored_dataset, oracle_of):
    doomed = cluster.add_node(**NODE)
    cluster.wait_for_nodes()
    task_id = DatasetPaths(scored_dataset).task_ids()[0]
    slow = _slow(oracle_of(scored_dataset, task_id))
    with RayDatasetScorer(scored_dataset, address=cluster.address, refresh_sec=1.0) as scorer:
        assert len(scorer.nodes()) == 3
        scorer.warm_up([task_id])
        results: list = []
        batch = threading.Thread(target=lambda: results.extend(scorer.score_many([(task_id, slow)] * 6, group=1)))
        batch.start()
        # Two slow scores per node (a slot and a queue place each); the doomed node's are running.
        victim = _wait(lambda: [n for n in scorer.nodes() if n.node_id == doomed.node_id and n.in_flight],
                       60, "requests on the doomed node")[0]
        time.sleep(1.0)
        cluster.remove_node(doomed, allow_graceful=False)
        batch.join(600)
        assert not batch.is_alive()
        assert [(s.reward, s.error) for s in results] == [(1.0, None)] * 6, [s.message for s in results]
        assert scorer.lost_requests >= 1  # the doomed node's requests were sent again, not answered by it
        assert victim.key not in {n.key for n in scorer.nodes()}
        assert doomed.node_id not in {n.node_id for n in scorer.nodes()}
        assert len(scorer.nodes()) == 2


def test_a_killed_actor_is_replaced_on_its_node_and_its_request_resent(cluster, scored_dataset, oracle_of):
    task_id = DatasetPaths(scored_dataset).task_ids()[0]
    slow = _slow(oracle_of(scored_dataset, task_id))
    with RayDatasetScorer(scored_dataset, address=cluster.address, refresh_sec=1.0) as scorer:
        results: list = []
        batch = threading.Thread(target=lambda: results.extend(scorer.score_many([(task_id, slow)] * 2, group=1)))
        batch.start()
        busy = _wait(lambda: [n for n in scorer.nodes() if n.in_flight], 60, "a request in flight")[0]
        time.sleep(1.0)
        ray.kill(scorer.actor(busy.key), no_restart=True)
        batch.join(600)
        assert [(s.reward, s.error) for s in results] == [(1.0, None)] * 2, [s.message for s in results]
        assert scorer.lost_requests >= 1
        # The node lives on (its image cache too): the next look starts a new actor there.
        back = _wait(lambda: [n for n in scorer.nodes() if n.node_id == busy.node_id and n.key != busy.key],
                     60, "a new actor on the node")
        assert back and scorer.score(task_id, None).reward == 0.0


def test_infrastructure_failures_stay_none(cluster, scored_dataset, oracle_of, tmp_path):
    # An environment that does not build: the node's answer is a build error, not a 0.
    broken = tmp_path / "broken"
    shutil.copytree(scored_dataset, broken, symlinks=True)
    task_id = DatasetPaths(broken).task_ids()[0]
    dockerfile = DatasetPaths(broken).task(task_id).environment / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text() + "\nRUN exit 3\n")
    with RayDatasetScorer(broken, address=cluster.address, retries=0) as scorer:
        score = scorer.score(task_id, oracle_of(broken, task_id))
        assert (score.reward, score.error) == (None, ScoreError.build) and score.message
        # No retry allowed and the node's actor killed under the request: no verdict, error `node`.
        other = DatasetPaths(broken).task_ids()[1]
        results: list = []
        waiter = threading.Thread(target=lambda: results.append(scorer.score(other, _slow(oracle_of(broken, other)))))
        waiter.start()
        busy = _wait(lambda: [n for n in scorer.nodes() if n.in_flight], 60, "a request in flight")[0]
        time.sleep(1.0)
        ray.kill(scorer.actor(busy.key), no_restart=True)
        waiter.join(600)
        assert results[0].reward is None and results[0].error == ScoreError.node, results[0]
        assert "lost" in results[0].message


def test_no_node_with_the_dataset_is_one_clear_error(cluster, tmp_path):
    with pytest.warns(NodeLeftOut, match="no dataset"):
        with pytest.raises(SandboxUnavailable, match="no Ray node can score"):
            RayDatasetScorer(tmp_path / "nowhere", address=cluster.address)
    assert not ray.is_initialized()  # the driver let go of the cluster it joined


def test_the_trainer_adapters_score_on_the_cluster_given_its_address(cluster, scored_dataset, oracle_of):
    from repo2rlenv.scoring import verl as verl_adapter
    from repo2rlenv.scoring.trl import TestReward

    task_id = DatasetPaths(scored_dataset).task_ids()[0]
    oracle = oracle_of(scored_dataset, task_id)
    reward = TestReward(scored_dataset, ray_address=cluster.address)
    try:
        got = reward(completions=[f"```python\n{oracle}\n```", "no code at all"], task_id=[task_id, task_id])
        assert got == [1.0, 0.0]
        assert isinstance(reward.scorer(), RayDatasetScorer) and sum(n.served for n in reward.scorer().nodes()) == 2
    finally:
        reward.close()
    try:
        out = verl_adapter.compute_score("x", f"```python\n{oracle}\n```", task_id, dataset_dir=str(scored_dataset),
                                         ray_address=cluster.address)
        assert out["score"] == 1.0
        assert isinstance(verl_adapter._scorers[(str(scored_dataset), cluster.address)], RayDatasetScorer)
    finally:
        verl_adapter._scorers.pop((str(scored_dataset), cluster.address)).close()

"""TaskScorer / DatasetScorer for real (Docker): every score equals what the task's test.sh gives in a
fresh verifier container (validation's Harbor-like trial), containers never carry anything from one score to
the next, and infrastructure failures come back as error kinds, never as a 0."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from repo2rlenv.dataset.taskdir import DatasetPaths, TaskPaths
from repo2rlenv.errors import UserError
from repo2rlenv.sandbox.docker import LABEL
from repo2rlenv.scoring import DatasetScorer, ScoreError, TaskScorer
from repo2rlenv.validate import TaskRunner, build_task_image

pytestmark = pytest.mark.slow

WEAK = "def test_nothing():\n    assert True\n"
# Counts its own runs in a file: passes on the first run, fails on any later one. Across the verifier's
# runs of one grading this is the verifier's problem (it answers with twins and isolation); across scores
# it would be the scorer's, if a container were ever reused.
COUNTER = ("import os\n\nP = '/tmp/r2e-run-count'\n\n\ndef test_count():\n"
           "    n = int(open(P).read()) if os.path.exists(P) else 0\n"
           "    with open(P, 'w') as fh:\n        fh.write(str(n + 1))\n    assert n == 0\n")
# Tries to leave things behind for whoever comes next: a conftest, a .pth in site-packages, a process.
POISON = ("import os, site, subprocess, sys\n\n\ndef _plant():\n"
          "    for path, text in [('/workspace/tests/conftest.py', 'def pytest_collection_modifyitems(items):\\n'\n"
          "                        '    items.clear()\\n'),\n"
          "                       (os.path.join(site.getsitepackages()[0], 'zz_r2e.pth'), 'import sys\\n')]:\n"
          "        try:\n            with open(path, 'w') as fh:\n                fh.write(text)\n"
          "        except OSError:\n            pass\n"
          "    try:\n        subprocess.Popen(['sleep', '1000'], start_new_session=True)\n"
          "    except OSError:\n        pass\n\n\n_plant()\n\n\ndef test_planted():\n    assert True\n")


def _fresh_trial(scorer: TaskScorer, source: str | None) -> float | None:
    """The reward test.sh gives for `source` in a fresh separate-mode verifier container (validation)."""
    runner = TaskRunner(scorer._client, scorer.task, build_task_image(scorer._client, scorer.task), scorer.limits)
    agent = runner.submit_text(source) if source is not None else (lambda _s: None)
    return runner.trial(agent).reward


def _task(dataset: Path, index: int = 0) -> TaskPaths:
    data = DatasetPaths(dataset)
    return data.task(data.task_ids()[index])


def test_scores_equal_a_fresh_verifier_container(scored_dataset, oracle_of):
    task = _task(scored_dataset)
    oracle = oracle_of(scored_dataset, task.root.name)
    with TaskScorer(task.root) as scorer:
        for source in (oracle, None, WEAK, COUNTER, POISON):
            score = scorer.score(source)
            assert score.ok, score.message
            assert score.reward == _fresh_trial(scorer, source)
        best = scorer.score(oracle)
    assert best.reward == 1.0 and best.b_pass == 1.0 and best.details is not None
    assert best.details.kills.get("B"), "the oracle's kills of B are reported"
    assert best.cases and all("A" in c.outcomes for c in best.cases)
    if best.details.mutation_score is not None:
        assert best.mutation_score == 1.0


def test_no_score_sees_what_an_earlier_one_left(scored_dataset, oracle_of):
    task = _task(scored_dataset)
    oracle = oracle_of(scored_dataset, task.root.name)
    with TaskScorer(task.root, warm=1, concurrency=1) as scorer:
        first = [scorer.score(COUNTER).reward for _ in range(3)]
        scorer.score(POISON)
        assert scorer.score(oracle).reward == 1.0
        assert scorer.score(None).reward == 0.0
    assert len(set(first)) == 1


def test_many_sync_and_async_keep_order_and_agree(scored_dataset, oracle_of):
    task = _task(scored_dataset)
    oracle = oracle_of(scored_dataset, task.root.name)
    sources = [oracle, None, WEAK, oracle]
    with TaskScorer(task.root, concurrency=2) as scorer:
        sync = [s.reward for s in scorer.score_many(sources)]
        concurrent = [s.reward for s in asyncio.run(scorer.ascore_many(sources))]
    assert sync == concurrent == [1.0, 0.0, 0.0, 1.0]


def test_a_group_scores_each_submission_as_it_scores_alone(scored_dataset, oracle_of, tmp_path):
    """One container and one verifier for the group (`score_group`): the rewards and cases of scoring each
    alone, with the litterers (COUNTER, POISON) in the middle of it; a task whose test.sh predates groups
    is scored one by one, with the same rewards."""
    task = _task(scored_dataset)
    oracle = oracle_of(scored_dataset, task.root.name)
    sources = [oracle, None, COUNTER, POISON, WEAK, oracle, COUNTER]
    with TaskScorer(task.root, warm=1, concurrency=1) as scorer:
        alone = [scorer.score(source) for source in sources]
        grouped = scorer.score_group(sources)
    assert [s.reward for s in grouped] == [s.reward for s in alone]
    assert grouped[0].reward == 1.0 and grouped[1].reward == 0.0 and all(s.ok for s in grouped)
    assert [sorted(c.id for c in s.cases) for s in grouped] == [sorted(c.id for c in s.cases) for s in alone]
    old = _copy(task, tmp_path / "old")
    test_sh = old.tests / "test.sh"
    test_sh.write_text(test_sh.read_text().replace('--strays kill "$@"', "--strays kill"))
    with TaskScorer(old.root, warm=1, concurrency=1) as scorer:
        assert [s.reward for s in scorer.score_group([oracle, None, WEAK])] == [1.0, 0.0, 0.0]


def _containers(client) -> set[str]:
    return {c.id for c in client.containers.list(all=True, filters={"label": f"{LABEL}=session"})}


def test_closing_leaves_no_container(scored_dataset, oracle_of):
    import docker

    client = docker.from_env()
    others = _containers(client)  # other tests' sessions may be alive; only this scorer's count
    task = _task(scored_dataset)
    scorer = TaskScorer(task.root, client=client, warm=2)
    scorer.warm_up()
    mine = _containers(client) - others
    assert len(mine) == 2
    scorer.score(POISON)
    mine |= _containers(client) - others  # the replacement the score started
    scorer.close()
    assert not (_containers(client) & mine)


def test_dataset_scorer_routes_ids_and_survives_eviction(scored_dataset, oracle_of):
    data = DatasetPaths(scored_dataset)
    a, b = data.task_ids()
    with DatasetScorer(scored_dataset, max_open_tasks=1) as scorer:
        got = scorer.score_many([(a, oracle_of(scored_dataset, a)), (b, oracle_of(scored_dataset, b)),
                                 (a, None), (b, WEAK)])
        assert [s.reward for s in got] == [1.0, 1.0, 0.0, 0.0], [s.message for s in got]
        assert [s.task_id for s in got] == [a, b, a, b]
        with pytest.raises(UserError, match="has no task"):
            scorer.score("../etc", WEAK)
        with pytest.raises(UserError, match="has no task"):
            scorer.score_many([(a, WEAK), ("nope", WEAK)])


def _copy(task: TaskPaths, dest: Path) -> TaskPaths:
    shutil.copytree(task.root, dest / task.root.name, symlinks=True)
    return TaskPaths(dest / task.root.name)


def test_infrastructure_failures_are_error_kinds_not_zeros(scored_dataset, tmp_path, oracle_of):
    import docker

    task = _task(scored_dataset)
    dead = docker.DockerClient(base_url=f"unix://{tmp_path}/no-daemon.sock", version="1.41")
    with TaskScorer(task.root, client=dead) as scorer:
        score = scorer.score(WEAK)
    assert score.reward is None and score.error in (ScoreError.build, ScoreError.sandbox) and score.message

    broken = _copy(task, tmp_path / "broken")
    dockerfile = broken.environment / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text() + "\nRUN exit 3\n")
    with TaskScorer(broken.root) as scorer:
        score = scorer.score(WEAK)
    assert (score.reward, score.error) == (None, ScoreError.build)

    slow = _copy(task, tmp_path / "slow")
    toml = slow.task_toml.read_text()
    slow.task_toml.write_text(toml.replace("[verifier]\ntimeout_sec = 600.0", "[verifier]\ntimeout_sec = 0.2"))
    assert slow.task_toml.read_text() != toml
    with TaskScorer(slow.root) as scorer:
        score = scorer.score(oracle_of(scored_dataset, task.root.name))
    assert (score.reward, score.error) == (None, ScoreError.timeout)


def test_a_directory_that_is_not_a_task_is_refused(tmp_path):
    with pytest.raises(UserError, match="not a task directory"):
        TaskScorer(tmp_path)
    with pytest.raises(UserError, match="not a dataset directory"):
        DatasetScorer(tmp_path)

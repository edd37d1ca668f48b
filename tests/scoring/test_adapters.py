"""The trainers' adapters, called the way the trainers call them, on a real dataset (Docker), without the
trainers installed: quick checks of paths the real-trainer tests (test_trl_real.py, test_verl_real.py) do
not take — TRL's async reward path (an event loop in a daemon thread), pickling, Docker failures.

The calls follow TRL 1.16's `GRPOTrainer._calculate_rewards` and verl 0.9's reward loop
(`NaiveRewardManager.run_single` with `get_custom_reward_fn`'s kwargs merge)."""

from __future__ import annotations

import asyncio
import functools
import inspect
import pickle
import threading
from pathlib import Path
from typing import Any

import pytest

from repo2rlenv.dataset.taskdir import DatasetPaths
from repo2rlenv.scoring.trl import AsyncTestReward, TestReward
from repo2rlenv.scoring import verl as verl_adapter

pytestmark = pytest.mark.slow


def _fenced(source: str) -> str:
    return f"Here are the tests.\n\n```python\n{source}```\n\nThey pass on the current code.\n"


class _TrainerState:
    global_step = 3


def _trl_kwargs(inputs: list[dict[str, Any]], log: dict[str, list]) -> dict[str, Any]:
    """`_calculate_rewards`' reward_kwargs: every input column but prompt/completion, plus its hooks."""
    keys = [k for k in inputs[0] if k not in ("prompt", "completion", "completion_ids")]
    kwargs: dict[str, Any] = {k: [example[k] for example in inputs] for k in keys}
    kwargs["trainer_state"] = _TrainerState()
    kwargs["log_extra"] = lambda column, values: log.setdefault(column, []).extend(values)
    kwargs["log_metric"] = lambda name, value: log.setdefault(name, []).append(value)
    return kwargs


def _is_async_callable(func: Any) -> bool:  # TRL's trainer/utils.is_async_callable
    while isinstance(func, functools.partial):
        func = func.func
    return inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(func.__call__)


def _call_like_trl(reward: Any, inputs: list[dict[str, Any]], completions: list[Any]) -> list[float | None]:
    log: dict[str, list] = {}
    prompts = [example["prompt"] for example in inputs]
    kwargs = _trl_kwargs(inputs, log)
    ids = [[1, 2, 3] for _ in completions]
    if _is_async_callable(reward):
        # TRL runs async reward functions on an event loop in a daemon thread.
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, daemon=True)
        thread.start()
        try:
            coro = reward(prompts=prompts, completions=completions, completion_ids=ids, **kwargs)
            out = asyncio.run_coroutine_threadsafe(coro, loop).result()
        finally:
            loop.call_soon_threadsafe(loop.stop)
    else:
        out = reward(prompts=prompts, completions=completions, completion_ids=ids, **kwargs)
    assert len(out) == len(prompts)
    assert log["repo2rlenv_reason"] and len(log["repo2rlenv_reason"]) == len(prompts)
    assert getattr(reward, "__name__", type(reward).__name__) == "repo2rlenv_tests"
    return out


def _rows(rl_export: Path) -> list[dict[str, Any]]:
    import datasets

    table = datasets.load_dataset("parquet", data_files=str(rl_export / "data" / "train.parquet"))["train"]
    return list(table)


@pytest.fixture(scope="module")
def rl_export(scored_dataset, tmp_path_factory) -> Path:
    from repo2rlenv.hub.rl_table import export_rl

    out = tmp_path_factory.mktemp("rl") / "prompts"
    export_rl(scored_dataset, out)
    return out


def test_trl_reward_sync_async_and_pickled(scored_dataset, rl_export, oracle_of):
    rows = _rows(rl_export)
    inputs = [rows[0], rows[0], rows[1], rows[1]]
    oracle = oracle_of(scored_dataset, rows[0]["task_id"])
    completions = [
        [{"role": "assistant", "content": _fenced(oracle)}],  # conversational, as TRL passes chat datasets
        "I would test it by hand.",  # no file: an empty submission
        [{"role": "assistant", "content": [{"type": "text", "text": _fenced(oracle_of(scored_dataset, rows[1]["task_id"]))}]}],
        _fenced("def test_nothing():\n    assert True\n"),
    ]
    reward = TestReward(scored_dataset)
    try:
        assert _call_like_trl(reward, inputs, completions) == [1.0, 0.0, 1.0, 0.0]
    finally:
        reward.close()
    clone = pickle.loads(pickle.dumps(AsyncTestReward(scored_dataset)))
    try:
        assert _call_like_trl(clone, inputs, completions) == [1.0, 0.0, 1.0, 0.0]
    finally:
        clone.close()


def test_trl_reward_is_none_when_docker_fails(scored_dataset, rl_export, tmp_path):
    import docker

    from repo2rlenv.scoring import DatasetScorer

    rows = _rows(rl_export)
    reward = TestReward(scored_dataset)
    dead = docker.DockerClient(base_url=f"unix://{tmp_path}/none.sock", version="1.41")
    reward._scorer = DatasetScorer(scored_dataset, client=dead)
    assert _call_like_trl(reward, rows[:1], [_fenced("def test_a():\n    assert 1\n")]) == [None]
    with pytest.raises(KeyError, match="task_id"):
        reward(prompts=["p"], completions=["c"], other=[1])


def test_verl_compute_score_as_the_reward_loop_calls_it(scored_dataset, rl_export, oracle_of):
    rows = _rows(rl_export)
    # get_custom_reward_fn: the config's reward_kwargs are merged into every call.
    fn = functools.partial(lambda raw, extra, *a, **kw: raw(*a, **{**kw, **extra}), verl_adapter.compute_score,
                           {"dataset_dir": str(scored_dataset)})

    async def run_single(row: dict[str, Any], response: str) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        extra_info = dict(row["extra_info"], num_turns=None, rollout_reward_scores={})
        result = await loop.run_in_executor(None, lambda: fn(
            data_source=row["data_source"], solution_str=response,
            ground_truth=row["reward_model"]["ground_truth"], extra_info=extra_info))
        score = result["score"] if isinstance(result, dict) else result
        return {"reward_score": score, "reward_extra_info": result}

    async def batch() -> list[dict[str, Any]]:
        return list(await asyncio.gather(run_single(rows[0], _fenced(oracle_of(scored_dataset, rows[0]["task_id"]))),
                                         run_single(rows[1], "no code here")))

    good, empty = asyncio.run(batch())
    assert good["reward_score"] == 1.0 and empty["reward_score"] == 0.0
    assert set(good["reward_extra_info"]) == set(empty["reward_extra_info"])  # verl gathers them as columns
    assert good["reward_extra_info"]["error"] is None


def test_verl_raises_rather_than_faking_a_zero(scored_dataset, rl_export, tmp_path, monkeypatch):
    import docker

    from repo2rlenv.scoring import DatasetScorer

    row = _rows(rl_export)[0]
    dead = docker.DockerClient(base_url=f"unix://{tmp_path}/none.sock", version="1.41")
    monkeypatch.setitem(verl_adapter._scorers, ("dead-dataset", None), DatasetScorer(scored_dataset, client=dead))
    with pytest.raises(verl_adapter.ScoringUnavailable, match="sandbox|build"):
        verl_adapter.compute_score("x", "```python\ndef test_a():\n    pass\n```", row["task_id"],
                                   dataset_dir="dead-dataset")
    out = verl_adapter.compute_score("x", "```python\ndef test_a():\n    pass\n```", row["task_id"],
                                     dataset_dir="dead-dataset", on_error="zero")
    assert out["score"] == 0.0 and out["error"] in ("sandbox", "build")


def test_rl_table_holds_prompts_and_nothing_hidden(scored_dataset, rl_export):
    rows = _rows(rl_export)
    data = DatasetPaths(scored_dataset)
    assert sorted(r["task_id"] for r in rows) == data.task_ids()
    for row in rows:
        task = data.task(row["task_id"])
        (message,) = row["prompt"]
        assert message["role"] == "user"
        assert task.instruction.read_text().strip() in message["content"]
        assert "```python" in message["content"] and row["test_path"] in message["content"]
        assert row["reward_model"] == {"style": "rule", "ground_truth": row["task_id"]}
        text = repr(row)
        hidden = [line[1:].strip() for line in task.broken_patch.read_text().splitlines()
                  if line.startswith("+") and not line.startswith("+++") and line[1:].strip()]
        assert hidden and not any(h in text for h in hidden), "B's text is in the row"
        for word in ("operator", "mutation_kind", "broken_patch", "oracle"):
            assert word not in row

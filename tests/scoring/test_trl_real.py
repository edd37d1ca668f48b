"""`TestReward` inside real `trl.GRPOTrainer` training steps, scored through real Docker.

The trainer is the documented example (examples/rl/trl_grpo_tiny.py): a tiny randomly initialised Llama
and a tokenizer made on the spot (no download), trained one GRPO step on CPU over the RL prompt table of a
generated dataset. The tokenizer's vocabulary is made of whole candidate answers (each task's reference
file, a weak file), so the group for a prompt mixes rewards and the step has a real advantage.

TRL is the `rl` extra (torch==2.13.0 first: scripts/dev_setup.sh). Without it the test skips, except
under CI, where it fails: CI must exercise the real trainer."""

from __future__ import annotations

import importlib.util
import math
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from repo2rlenv.scoring.trl import TestReward

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:.*checkpointing.*:FutureWarning")]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "rl" / "trl_grpo_tiny.py"
COLUMNS = {"task_id", "data_source", "ability", "reward_model", "extra_info", "test_path", "repo", "function",
           "difficulty", "siblings"}


@pytest.fixture(scope="session")  # before the session's dataset: a skip costs nothing
def example():
    try:
        import trl  # noqa: F401
    except ImportError as exc:
        if os.environ.get("CI"):
            pytest.fail(f"CI requires TRL (the `rl` extra, scripts/dev_setup.sh): {exc}")
        pytest.skip(f"TRL is not installed ({exc}); under CI this test fails instead")
    spec = importlib.util.spec_from_file_location("trl_grpo_tiny", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


class RecordingReward(TestReward):
    """The real reward, with what TRL passed it and what it returned kept for the assertions."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.calls: list[tuple[dict[str, Any], list[float | None]]] = []

    def __call__(self, prompts=None, completions=(), **columns):
        out = super().__call__(prompts, completions, **columns)
        self.calls.append(({"prompts": prompts, "completions": completions, **columns}, out))
        return out


def test_grpo_trainer_trains_a_step_on_our_reward(example, scored_dataset, oracle_of, tmp_path):
    import trl

    reward = RecordingReward(scored_dataset, concurrency=2)
    trainer = example.build_trainer(scored_dataset, tmp_path, reward=reward, generations=4, steps=1)
    before = {name: p.detach().clone() for name, p in trainer.model.named_parameters()}
    try:
        trainer.train()
    finally:
        reward.close()

    # TRL's calling convention, as its GRPOTrainer made the call.
    assert trainer.reward_func_names == ["repo2rlenv_tests"]
    (kwargs, returned), = reward.calls
    n = 4 * 2  # 4 generations for each of the dataset's 2 prompts
    assert set(kwargs) == {"prompts", "completions", "completion_ids", "trainer_state", "log_extra",
                           "log_metric"} | COLUMNS, sorted(kwargs)
    assert kwargs["trainer_state"] is trainer.state
    assert kwargs["log_metric"] == trainer._log_metric and kwargs["log_extra"] == trainer._log_completion_extra
    for column in COLUMNS | {"prompts", "completions", "completion_ids"}:
        assert len(kwargs[column]) == n, column
    for prompt, task_id in zip(kwargs["prompts"], kwargs["task_id"]):
        (message,) = prompt  # conversational prompts pass through as messages
        assert message["role"] == "user" and kwargs["test_path"][kwargs["task_id"].index(task_id)] in message["content"]
    for ids in kwargs["completion_ids"]:
        assert len(ids) == 1 and all(isinstance(i, int) for i in ids)

    # What the reward returned for each completion, and that TRL took those values.
    texts = [completion[-1]["content"] for completion in kwargs["completions"]]
    assert all(completion[-1]["role"] == "assistant" for completion in kwargs["completions"])
    for task_id, text, value in zip(kwargs["task_id"], texts, returned):
        assert value in (0.0, 1.0), (task_id, text, value)
        if text == example.fenced(oracle_of(scored_dataset, task_id)):
            assert value == 1.0, task_id
        elif text in ("", example.fenced(example.WEAK)):
            assert value == 0.0, (task_id, text)
    assert 1.0 in returned and 0.0 in returned, returned
    assert list(trainer._logs["rewards"]["repo2rlenv_tests"]) == returned
    assert len(trainer._logs["extra"]["repo2rlenv_reason"]) == n

    assert trainer.state.global_step == 1
    step = next(entry for entry in trainer.state.log_history if "rewards/repo2rlenv_tests/mean" in entry)
    assert math.isclose(step["rewards/repo2rlenv_tests/mean"], sum(returned) / n, abs_tol=1e-6)
    assert step["repo2rlenv/infra_errors"] == 0.0 and step["repo2rlenv/score_sec"] > 0

    # A group with mixed rewards has a non-zero advantage: the step moved the policy.
    groups = [returned[i:i + 4] for i in range(0, n, 4)]
    if any(len(set(group)) > 1 for group in groups):
        assert step["grad_norm"] > 0
        assert any(not p.detach().equal(before[name]) for name, p in trainer.model.named_parameters())
    print(f"trl {trl.__version__}: rewards {returned}")

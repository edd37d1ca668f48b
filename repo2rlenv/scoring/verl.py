"""A `compute_score` for verl's reward managers.

verl loads it by path and name and calls it once per response:

    reward.custom_reward_function.path=<site-packages>/repo2rlenv/scoring/verl.py
    reward.custom_reward_function.name=compute_score
    +reward.custom_reward_function.reward_kwargs.dataset_dir=/data/my-dataset

    compute_score(data_source, solution_str, ground_truth, extra_info=None, **reward_kwargs)

`ground_truth` is the task id (`reward_model.ground_truth` in `repo2rlenv export --format rl`); the
dataset directory comes from `reward_kwargs` or `REPO2RLENV_DATASET`; `ray_address` (or
`REPO2RLENV_RAY_ADDRESS`: "auto" inside verl's own Ray cluster) scores on every node of that cluster that
offers Docker instead of this machine's Docker. The result is a dict: `score` (the
reward) and the same extra keys for every response (verl gathers them into columns). verl has no "no
score" value, so an infrastructure failure raises `ScoringUnavailable` by default (the step fails loudly
instead of training on a fake 0); `on_error="zero"` scores it 0 with `error` set, for users who prefer that.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from repo2rlenv.errors import Repo2RLEnvError
from repo2rlenv.scoring.backend import open_scorer
from repo2rlenv.scoring.cluster import RayDatasetScorer
from repo2rlenv.scoring.completion import extract_test_file
from repo2rlenv.scoring.scorer import DatasetScorer

_scorers: dict[tuple[str, str | None], DatasetScorer | RayDatasetScorer] = {}
_lock = threading.Lock()


class ScoringUnavailable(Repo2RLEnvError):
    """No verdict could be produced for a response (Docker, a timeout): not the response's fault."""


def _scorer(dataset_dir: str, ray_address: str | None) -> DatasetScorer | RayDatasetScorer:
    # One scorer per dataset per process: verl calls compute_score from a thread pool of its reward worker.
    with _lock:
        key = (dataset_dir, ray_address)
        if key not in _scorers:
            _scorers[key] = open_scorer(dataset_dir, ray_address=ray_address)
        return _scorers[key]


def compute_score(data_source: str, solution_str: str, ground_truth: Any, extra_info: dict | None = None,
                  *, dataset_dir: str | None = None, on_error: str = "raise", ray_address: str | None = None,
                  **_: Any) -> dict[str, Any]:
    """The reward of one response (`solution_str`) on the task `ground_truth`."""
    root = dataset_dir or os.environ.get("REPO2RLENV_DATASET")
    ray_address = ray_address or os.environ.get("REPO2RLENV_RAY_ADDRESS") or None
    if not root:
        raise ValueError("compute_score needs the dataset directory: reward_kwargs.dataset_dir or REPO2RLENV_DATASET")
    task_id = str(ground_truth.get("task_id") if isinstance(ground_truth, dict) else ground_truth)
    score = _scorer(str(root), ray_address).score(task_id, extract_test_file(solution_str))
    if not score.ok and on_error != "zero":
        raise ScoringUnavailable(f"{task_id}: {score.error.value}: {score.message}")
    flat = score.summary()
    return {"score": float(score.reward or 0.0), **{k: v for k, v in flat.items() if k != "reward"}}

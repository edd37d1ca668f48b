"""A reward function for TRL's `GRPOTrainer` (and any trainer with its calling convention).

    from repo2rlenv.scoring.trl import TestReward
    trainer = GRPOTrainer(..., reward_funcs=[TestReward("out")], train_dataset=load_dataset(...rl table...))

TRL calls `reward(prompts=…, completions=…, completion_ids=…, **columns)`, the dataset's other columns
passed as lists one entry per completion, plus `trainer_state`, `log_extra` and `log_metric`. The task
column (`task_id` in `repo2rlenv export --format rl`) says which task each completion is for; the
completion becomes the test file by `repo2rlenv.scoring.completion.extract_test_file`. The result is one
reward per completion, `None` where the infrastructure failed (TRL turns None into NaN and leaves the
sample out, rather than teaching the policy that its tests scored 0).

`AsyncTestReward` is the same with an `async __call__`: TRL runs async reward functions concurrently on
its own event loop. Both pickle without their Docker connections (reopened on first use). With
`ray_address` ("auto", "HOST:PORT", or "local") the scores run on every node of that Ray cluster that
offers Docker (`RayDatasetScorer`) instead of this machine's Docker.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Sequence

from repo2rlenv.scoring.backend import open_scorer
from repo2rlenv.scoring.completion import completion_text, extract_test_file
from repo2rlenv.scoring.models import Score
from repo2rlenv.scoring.cluster import RayDatasetScorer
from repo2rlenv.scoring.scorer import DEFAULT_CONCURRENCY, DatasetScorer


class TestReward:
    """`f(prompts, completions, **columns) -> list[float | None]` over a repo2rlenv dataset directory."""

    __test__ = False  # a class named Test… that pytest must not collect

    def __init__(self, dataset_dir: Path | str, *, task_column: str = "task_id",
                 concurrency: int = DEFAULT_CONCURRENCY, warm: int = 1, ray_address: str | None = None):
        self.dataset_dir = Path(dataset_dir)
        self.task_column = task_column
        self.concurrency = concurrency
        self.warm = warm
        self.ray_address = ray_address  # `repo2rlenv.scoring.backend`: None scores on this machine
        # TRL names a reward function by `__name__` in its logs (a callable instance falls back to its class).
        self.__name__ = "repo2rlenv_tests"
        self._lock = threading.Lock()
        self._scorer: DatasetScorer | RayDatasetScorer | None = None

    def scorer(self) -> DatasetScorer | RayDatasetScorer:
        with self._lock:
            if self._scorer is None:
                self._scorer = open_scorer(self.dataset_dir, ray_address=self.ray_address,
                                           concurrency=self.concurrency, warm=self.warm)
            return self._scorer

    def _pairs(self, completions: Sequence[Any], columns: dict[str, Any]) -> list[tuple[str, str | None]]:
        if self.task_column not in columns:
            raise KeyError(f"the reward needs the dataset column {self.task_column!r} (repo2rlenv export "
                           f"--format rl writes it); got columns {sorted(columns)}")
        task_ids = list(columns[self.task_column])
        if len(task_ids) != len(completions):
            raise ValueError(f"{len(completions)} completions but {len(task_ids)} {self.task_column} values")
        return [(str(task_id), extract_test_file(completion_text(c))) for task_id, c in zip(task_ids, completions)]

    @staticmethod
    def _report(scores: list[Score], columns: dict[str, Any]) -> list[float | None]:
        log_metric, log_extra = columns.get("log_metric"), columns.get("log_extra")
        if callable(log_metric) and scores:
            log_metric("repo2rlenv/infra_errors", sum(not s.ok for s in scores) / len(scores))
            log_metric("repo2rlenv/score_sec", sum(s.duration_sec for s in scores) / len(scores))
        if callable(log_extra):
            log_extra("repo2rlenv_reason", [s.reason or s.message or "" for s in scores])
        return [s.reward for s in scores]

    def __call__(self, prompts: Sequence[Any] | None = None, completions: Sequence[Any] = (),
                 **columns: Any) -> list[float | None]:
        return self._report(self.scorer().score_many(self._pairs(completions, columns)), columns)

    def close(self) -> None:
        with self._lock:
            scorer, self._scorer = self._scorer, None
        if scorer is not None:
            scorer.close()

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_lock")
        state["_scorer"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()


class AsyncTestReward(TestReward):
    """The same reward with `async __call__`, for TRL's concurrent async reward path."""

    async def __call__(self, prompts: Sequence[Any] | None = None, completions: Sequence[Any] = (),
                       **columns: Any) -> list[float | None]:
        import asyncio

        pairs = self._pairs(completions, columns)
        scorer = await asyncio.to_thread(self.scorer)
        return self._report(await scorer.ascore_many(pairs), columns)

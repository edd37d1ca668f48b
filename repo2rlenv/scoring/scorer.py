"""Score agent-written test files against a task's hidden versions, fast enough for an RL loop.

A score is what the task's own `tests/test.sh` gives in a fresh verifier container, as Harbor grades a
separate-mode trial: the task's environment image, the submission at the task's artifact path, `tests/`
copied to /tests, `bash /tests/test.sh`, `/logs/verifier/reward.txt` read. Nothing of the verifier is
re-implemented here, so a score cannot drift from a Harbor trial's reward. What is saved is everything
around it: the image is built once per task, containers are started ahead of need (`WarmPool`), and scores
run side by side up to a bound.

    with TaskScorer("out/tasks/acme-ts-1a2b3c4d") as scorer:
        score = scorer.score(open("test_mine.py").read())
        score.reward, score.b_pass, score.cases

    with DatasetScorer("out") as scorer:
        scores = scorer.score_many([(task_id, source), ...])
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Iterable

from pydantic import ValidationError

from repo2rlenv.dataset.task_toml import TaskToml
from repo2rlenv.dataset.taskdir import DatasetPaths, TaskPaths
from repo2rlenv.errors import Repo2RLEnvError, UserError
from repo2rlenv.sandbox.base import Limits
from repo2rlenv.scoring.models import Score, ScoreError
from repo2rlenv.scoring.pool import PoolClosed, WarmPool
from repo2rlenv.scoring.staleness import warn_if_stale
from repo2rlenv.verifiers.config_model import RewardDetails

DEFAULT_CONCURRENCY = 2
DEFAULT_WARM = 2
# Submissions to one task that `score_many` grades in one container with one verifier (a GRPO group's
# rollouts share their prompt): what a grading pays before its first run is paid once per group.
DEFAULT_GROUP = 8
# Containers get no pid limit from Harbor; this one only stops a fork bomb from taking the host down.
_PIDS = 4096


def in_groups(pairs: list[tuple[str, str | None]], group: int, workers: int,
              score_group: Callable[[str, list[str | None]], list[Score]]) -> list[Score]:
    """Scores of `pairs` in their order: each task's submissions in groups of up to `group`, `workers`
    groups at a time, each group scored by `score_group(task_id, sources)`."""
    by_task: dict[str, list[int]] = {}
    for k, (task_id, _) in enumerate(pairs):
        by_task.setdefault(task_id, []).append(k)
    size = max(1, group)
    chunks = [(task_id, ks[i:i + size]) for task_id, ks in by_task.items() for i in range(0, len(ks), size)]
    scores: list[Score | None] = [None] * len(pairs)
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(chunks) or 1))) as pool:
        done = pool.map(lambda chunk: score_group(chunk[0], [pairs[k][1] for k in chunk[1]]), chunks)
        for (_, ks), got in zip(chunks, done):
            for k, score in zip(ks, got):
                scores[k] = score
    return [s for s in scores if s is not None]


def _docker() -> Any:
    from repo2rlenv.sandbox.docker import docker_client

    return docker_client()


class TaskScorer:
    """Scores submissions for one task directory.

    `warm`: idle containers kept ready; `concurrency`: scores running at once (or share `slots` with
    other scorers, as `DatasetScorer` does). The image is built on the first score or `warm_up()`."""

    def __init__(self, task_dir: Path | str, *, client: Any = None, warm: int = DEFAULT_WARM,
                 concurrency: int = DEFAULT_CONCURRENCY, slots: threading.Semaphore | None = None):
        from repo2rlenv.validate import verifier_files

        self.task = TaskPaths(Path(task_dir))
        if not self.task.task_toml.is_file():
            raise UserError(f"{task_dir} is not a task directory (no task.toml)")
        self.task_id = self.task.root.name
        config = TaskToml.from_toml(self.task.task_toml.read_text())
        warn_if_stale(self.task.root, config.metadata.repo2env.verifier_version)
        self.test_path = config.metadata.repo2env.test_synthesis.test_path
        self.verifier_timeout = config.verifier.timeout_sec
        # The artifact Harbor hands to the verifier container is the test file; the scorer puts the
        # submission exactly there.
        self.artifact = f"/workspace/{self.test_path}"
        self.limits = Limits(timeout_sec=self.verifier_timeout, memory_mb=config.environment.memory_mb,
                             cpus=config.environment.cpus, pids=_PIDS)
        self._tests = verifier_files(self.task)
        self._client = client
        self._warm = warm
        self._concurrency = concurrency
        self._slots = slots or threading.BoundedSemaphore(concurrency)
        self._lock = threading.Lock()
        self._image: str | None = None
        self._pool: WarmPool | None = None
        self._closed = False

    # -- set-up ------------------------------------------------------------------------------------------

    def warm_up(self) -> None:
        """Build the image and start the pool's containers now rather than on the first score."""
        self._ready_pool().wait()

    def _ready_pool(self) -> WarmPool:
        with self._lock:
            if self._closed:
                raise UserError(f"the scorer of {self.task_id} is closed")
            if self._pool is None:
                from repo2rlenv.validate import build_task_image

                self._client = self._client or _docker()
                self._image = build_task_image(self._client, self.task)
                self._pool = WarmPool(self._client, self._image, self.limits, size=self._warm)
            return self._pool

    # -- scoring -----------------------------------------------------------------------------------------

    def score(self, test_source: str | None) -> Score:
        """The reward of `test_source` as the task's test file (None: no file, as an empty submission)."""
        start = time.monotonic()
        with self._slots:
            session = self._take(start)
            if isinstance(session, Score):
                return session
            try:
                if test_source is not None:
                    session.write_files({self.artifact: test_source})
                from repo2rlenv.validate import grade_in

                outcome = grade_in(session, self._tests, self.verifier_timeout)
            except Exception as exc:
                return self._failed(ScoreError.sandbox, exc, start)
            finally:
                session.close()
        return self._verdict(outcome, time.monotonic() - start)

    def score_group(self, sources: list[str | None]) -> list[Score]:
        """Scores of `sources`, graded one after another in one container by one verifier: each grading is
        the one `score` gives (every run's defence, fresh twins and run order), and nothing of one
        grading's runs is left for the next (`verifier.score_batch`); what is shared is the verifier's
        start and its zygote. A submission the group could not finish (the verifier killed or crashed, a
        task made before batches) is scored alone, so no submission's score depends on another's."""
        if len(sources) < 2:
            return [self.score(source) for source in sources]
        start = time.monotonic()
        outcomes: list[Any] = [None] * len(sources)
        with self._slots:
            session = self._take(start)
            if isinstance(session, Score):
                return [session] * len(sources)
            try:
                from repo2rlenv.validate import grade_batch_in

                outcomes = grade_batch_in(session, self._tests, self.verifier_timeout, list(sources))
            except Exception:  # the container failed under the group: each is scored alone instead
                pass
            finally:
                session.close()
        return [self.score(source) if outcome is None else self._verdict(outcome, outcome.duration_sec)
                for source, outcome in zip(sources, outcomes)]

    def _take(self, start: float) -> Any:
        """A fresh container, or the Score saying why there is none."""
        for _ in range(2):  # once more when a dataset scorer released the pool under us
            try:
                pool = self._ready_pool()
            except UserError:
                raise
            except Repo2RLEnvError as exc:
                return self._failed(ScoreError.build, exc, start)
            except Exception as exc:  # the Docker daemon is unreachable, say
                return self._failed(ScoreError.sandbox, exc, start)
            try:
                return pool.take()
            except PoolClosed:
                continue
            except Exception as exc:
                return self._failed(ScoreError.sandbox, exc, start)
        return self._failed(ScoreError.sandbox, PoolClosed("the warm pool kept closing"), start)

    def _verdict(self, outcome: Any, took: float) -> Score:
        if outcome.timed_out:
            return Score(task_id=self.task_id, reward=None, error=ScoreError.timeout, duration_sec=took,
                         message=f"test.sh ran past the task's verifier timeout ({self.verifier_timeout:.0f}s)")
        if outcome.reward is None:
            return Score(task_id=self.task_id, reward=None, error=ScoreError.no_reward, duration_sec=took,
                         message="test.sh finished without a readable /logs/verifier/reward.txt")
        details, message = None, ""
        if outcome.details:
            try:
                details = RewardDetails.model_validate(outcome.details)
            except ValidationError as exc:
                message = f"reward-details.json does not read as this version's schema: {exc.error_count()} errors"
        else:
            # test.sh writes 0 itself when the verifier was killed before it wrote anything: a verdict on the
            # submission (it is what Harbor records), with nothing to explain it.
            message = "the verifier wrote no reward-details.json (killed or crashed: test.sh scored 0)"
        if details is not None and details.fault == "verifier":
            return Score(task_id=self.task_id, reward=None, error=ScoreError.verifier, details=details,
                         message=details.reason or "internal error", duration_sec=took)
        return Score(task_id=self.task_id, reward=outcome.reward, details=details, message=message,
                     duration_sec=took)

    def _failed(self, kind: ScoreError, exc: BaseException, start: float) -> Score:
        return Score(task_id=self.task_id, reward=None, error=kind, message=str(exc) or type(exc).__name__,
                     duration_sec=time.monotonic() - start)

    def score_many(self, sources: Iterable[str | None], *, group: int = DEFAULT_GROUP) -> list[Score]:
        """Scores in the order given: groups of up to `group` (`score_group`; 1: a container each), up to
        the scorer's concurrency at a time."""
        items = list(sources)
        chunks = [items[k:k + max(1, group)] for k in range(0, len(items), max(1, group))]
        with ThreadPoolExecutor(max_workers=max(1, min(self._concurrency, len(chunks) or 1))) as workers:
            return [score for scores in workers.map(self.score_group, chunks) for score in scores]

    async def ascore(self, test_source: str | None) -> Score:
        return await asyncio.to_thread(self.score, test_source)

    async def ascore_many(self, sources: Iterable[str | None], *, group: int = DEFAULT_GROUP) -> list[Score]:
        return await asyncio.to_thread(self.score_many, list(sources), group=group)

    # -- tear-down ---------------------------------------------------------------------------------------

    def release(self) -> None:
        """Remove the idle containers; the next score starts a new pool (the image stays built)."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
        self.release()

    def __enter__(self) -> "TaskScorer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class DatasetScorer:
    """Scores submissions for any task of a dataset directory.

    One bound on concurrent scores for the whole dataset; a warm pool per task in use, the least recently
    used closed past `max_open_tasks` (its image stays built, so reopening costs a container start)."""

    def __init__(self, dataset_dir: Path | str, *, client: Any = None, warm: int = 1,
                 concurrency: int = DEFAULT_CONCURRENCY, max_open_tasks: int = 8):
        self.dataset = DatasetPaths(Path(dataset_dir))
        if not self.dataset.tasks.is_dir():
            raise UserError(f"{dataset_dir} is not a dataset directory (no tasks/)")
        self._client = client
        self._warm = warm
        self._concurrency = concurrency
        self._max_open = max(1, max_open_tasks)
        self._slots = threading.BoundedSemaphore(concurrency)
        self._lock = threading.Lock()
        self._open: OrderedDict[str, TaskScorer] = OrderedDict()

    def task_ids(self) -> list[str]:
        return self.dataset.task_ids()

    def scorer(self, task_id: str) -> TaskScorer:
        """The task's scorer (opened on first use). An id the dataset lacks is a caller's error."""
        with self._lock:
            if task_id in self._open:
                self._open.move_to_end(task_id)
                return self._open[task_id]
            if "/" in task_id or task_id.startswith(".") or not self.dataset.task(task_id).task_toml.is_file():
                raise UserError(f"the dataset {self.dataset.root} has no task {task_id!r}")
            self._client = self._client or _docker()
            scorer = TaskScorer(self.dataset.task(task_id).root, client=self._client, warm=self._warm,
                                slots=self._slots)
            self._open[task_id] = scorer
            evicted = self._open.popitem(last=False)[1] if len(self._open) > self._max_open else None
        if evicted is not None:
            evicted.release()  # a score already holding it still works: its pool is simply restarted
        return scorer

    def warm_up(self, task_ids: Iterable[str] | None = None) -> None:
        """Build the tasks' images and start their pools now (all tasks: None; past `max_open_tasks` the
        earliest pools close again, their images stay built)."""
        for task_id in (self.task_ids() if task_ids is None else list(task_ids)):
            self.scorer(task_id).warm_up()

    def score(self, task_id: str, test_source: str | None) -> Score:
        return self.scorer(task_id).score(test_source)

    def score_group(self, task_id: str, sources: list[str | None]) -> list[Score]:
        """Scores of submissions to one task, graded together (`TaskScorer.score_group`)."""
        return self.scorer(task_id).score_group(list(sources))

    def score_many(self, items: Iterable[tuple[str, str | None]], *, group: int = DEFAULT_GROUP) -> list[Score]:
        """Scores in the order given; submissions to the same task are graded in groups of up to `group`
        (`TaskScorer.score_group`; 1: a container each)."""
        pairs = list(items)
        for task_id, _ in pairs:
            self.scorer(task_id)  # unknown ids fail before anything runs
        return in_groups(pairs, group, self._concurrency, self.score_group)

    async def ascore(self, task_id: str, test_source: str | None) -> Score:
        return await asyncio.to_thread(self.score, task_id, test_source)

    async def ascore_many(self, items: Iterable[tuple[str, str | None]], *, group: int = DEFAULT_GROUP) -> list[Score]:
        return await asyncio.to_thread(self.score_many, list(items), group=group)

    def close(self) -> None:
        with self._lock:
            scorers, self._open = list(self._open.values()), OrderedDict()
        for scorer in scorers:
            scorer.close()

    def __enter__(self) -> "DatasetScorer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

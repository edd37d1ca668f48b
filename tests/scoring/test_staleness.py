"""The scorers warn, once per task, when a task's verifier predates the newest integrity fix."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import pytest

from repo2rlenv.dataset.taskdir import DatasetPaths
from repo2rlenv.scoring import DatasetScorer, StaleVerifierWarning, TaskScorer
from repo2rlenv.scoring.staleness import is_stale
from repo2rlenv.verifiers.test_synthesis.verifier_version import INTEGRITY_VERSION

pytestmark = pytest.mark.slow


@pytest.fixture
def dataset(scored_dataset, tmp_path, age_task) -> tuple[Path, str, str]:
    """A copy of the scored dataset whose first task is old; (root, old task id, current task id)."""
    root = tmp_path / "ds"
    shutil.copytree(scored_dataset, root, symlinks=True)
    old, current = DatasetPaths(root).task_ids()[:2]
    age_task(DatasetPaths(root).task(old).root)
    return root, old, current


def _stale_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, StaleVerifierWarning)]


def test_staleness_is_below_the_integrity_version():
    assert is_stale(None) and is_stale(INTEGRITY_VERSION - 1)
    assert not is_stale(INTEGRITY_VERSION) and not is_stale(INTEGRITY_VERSION + 1)


def test_task_scorer_warns_once_per_old_task_and_never_for_a_current_one(dataset):
    root, old, current = dataset
    tasks = DatasetPaths(root)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            TaskScorer(tasks.task(old).root).close()
            TaskScorer(tasks.task(current).root).close()
    found = _stale_warnings(caught)
    assert len(found) == 1, found
    assert old in found[0] and "records no verifier version" in found[0]
    assert f"repo2rlenv upgrade {root}" in found[0]


def test_dataset_scorer_warns_once_even_when_it_reopens_the_task(dataset):
    root, old, current = dataset
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with DatasetScorer(root, client=object(), max_open_tasks=1) as scorer:
            for task_id in (old, current, old, current):  # each open evicts the other
                scorer.scorer(task_id)
    found = _stale_warnings(caught)
    assert len(found) == 1 and old in found[0], found

"""One real dataset for the scoring tests: the bundled example, generated once per session with Docker
(mutation strategy, siblings on, validated), so scores have hidden siblings and coverage to report."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from repo2rlenv.config import GenerateConfig
from repo2rlenv.dataset.taskdir import DatasetPaths
from repo2rlenv.generate import run_generate
from repo2rlenv.progress import Reporter

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "minicart"


@pytest.fixture(scope="session")
def scored_dataset(tmp_path_factory, docker_ready, r2e_cache) -> Path:
    """A validated dataset of two example tasks; tests copy it before changing anything."""
    root = tmp_path_factory.mktemp("scoring")
    repo = root / "minicart"
    shutil.copytree(EXAMPLE, repo, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", ".coverage"))
    out = root / "ds"
    config = GenerateConfig(repo=str(repo), out=out, sandbox="docker", cache_dir=r2e_cache,
                            pipeline_opts={"strategy": "mutation", "limit": 2, "seed": 3})
    result = run_generate(config, Reporter(quiet=True))
    assert len(result.emitted) == 2, result
    return out


@pytest.fixture(scope="session")
def oracle_of():
    """`oracle_of(dataset, task_id)`: the task's reference test file."""

    def read(dataset: Path, task_id: str) -> str:
        task = DatasetPaths(dataset).task(task_id)
        return next(task.solution.glob("test_*.py")).read_text()

    return read

"""Sibling mutants (`siblings=K`): more changes of the same function baked into tests/, graded too."""

from __future__ import annotations

import json

import pytest

from repo2rlenv.config import GenerateConfig
from repo2rlenv.generate import run_generate
from repo2rlenv.dataset.manifest import read_manifest
from repo2rlenv.dataset.task_toml import TaskToml
from repo2rlenv.progress import Reporter
from repo2rlenv.dataset.taskdir import DatasetPaths


@pytest.mark.slow
def test_siblings_are_emitted_and_the_oracle_still_scores_one(example_repo, tmp_path, docker_ready, r2e_cache):
    out = tmp_path / "ds"
    config = GenerateConfig(repo=str(example_repo), out=out, sandbox="docker", cache_dir=r2e_cache,
                            pipeline_opts={"strategy": "mutation", "limit": 2, "seed": 0, "siblings": 2})
    result = run_generate(config, Reporter(quiet=True))
    dataset = DatasetPaths(out)
    with_siblings = 0
    for task_id in result.emitted:
        task = dataset.task(task_id)
        meta = TaskToml.from_toml(task.task_toml.read_text()).metadata.repo2env.test_synthesis
        diffs = sorted(p.name for p in task.siblings.glob("*.diff")) if task.siblings.is_dir() else []
        assert meta.siblings == len(diffs) <= 2
        assert json.loads(task.verifier_config.read_text())["variants"]["siblings"] == [f"siblings/{d}" for d in diffs]
        # Each sibling is a different change of the same function than B.
        for name in diffs:
            sib = (task.siblings / name).read_text()
            assert sib != task.broken_patch.read_text()
            assert sib.splitlines()[0] == task.broken_patch.read_text().splitlines()[0]
        with_siblings += bool(diffs)
    assert with_siblings >= 1
    assert all(r.validation is not None and r.validation.ok for r in read_manifest(dataset.manifest))

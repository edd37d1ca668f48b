"""A declared development dependency that cannot install no longer breaks the environment (issue 34,
item 2): it is installed on its own, dropped with pip's reason, listed in the summary and the dataset card, and
tasks still come out — from the sandbox image and from each task's own image (validation builds it)."""

from __future__ import annotations

import json

import pytest

from repo2rlenv.config import GenerateConfig
from repo2rlenv.dataset.manifest import read_manifest
from repo2rlenv.dataset.taskdir import DatasetPaths
from repo2rlenv.generate import run_generate
from repo2rlenv.hub.export import export_dataset
from repo2rlenv.hub.registry import PublishTarget
from repo2rlenv.progress import Reporter

# iniconfig is real (pytest depends on it), but not at this version: the install fails whatever the index.
UNINSTALLABLE = "iniconfig==0.0.0.1"
PYPROJECT = ('[project]\nname = "tinypkg"\nversion = "0.0.1"\n'
             '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n'
             f'[dependency-groups]\ndev = ["{UNINSTALLABLE}"]\n')
SOURCE = 'def grade(n):\n    if n >= 50:\n        return "pass"\n    return "fail"\n'
TESTS = 'from tinypkg.core import grade\n\n\ndef test_grade_runs():\n    assert grade(70) in ("pass", "fail")\n'


@pytest.mark.slow
def test_an_uninstallable_dev_dependency_is_dropped_and_tasks_come_out(make_repo, tiny_package, tmp_path, docker_ready,
                                                                       r2e_cache):
    root = make_repo({**tiny_package(TESTS, source=SOURCE), "pyproject.toml": PYPROJECT})
    out = tmp_path / "ds"
    config = GenerateConfig(repo=str(root), out=out, sandbox="docker", cache_dir=r2e_cache,
                            pipeline_opts={"strategy": "mutation", "limit": 1, "seed": 0, "oracle": "differential"})
    result = run_generate(config, Reporter(quiet=True))
    assert len(result.emitted) == 1
    (dropped,) = json.loads((out / "summary.json").read_text())["dropped dependencies"]
    assert dropped["spec"] == UNINSTALLABLE and "[dependency-groups] dev" in dropped["source"]
    assert dropped["reason"].startswith("did not install: ") and UNINSTALLABLE in dropped["reason"]
    # The task's own image installs the same way, so it builds too and the oracle scores 1.0 there.
    (record,) = read_manifest(DatasetPaths(out).manifest)
    assert record.validation is not None and record.validation.ok
    # The dataset card says what its environments lack, and why.
    export = export_dataset(out, tmp_path / "export", PublishTarget(repo_id=None, git_url=None, dataset_name="d"))
    assert export.stats.dropped_dependencies == {".": [f"{UNINSTALLABLE} ({dropped['source']}): {dropped['reason']}"]}
    assert f"{UNINSTALLABLE} (" in (tmp_path / "export" / "README.md").read_text()

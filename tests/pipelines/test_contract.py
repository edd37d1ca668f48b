"""The contract every registered pipeline meets, run for real on the bundled example repo.

Loops over the registry and runs each pipeline end to end (real Docker, real suite, real verifier):
it must emit validated tasks, write its records through their models, leak nothing of B into what the
agent sees, and continue where it stopped when rerun.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from repo2rlenv.config import GenerateConfig
from repo2rlenv.generate import run_generate
from repo2rlenv.dataset.manifest import read_manifest
from repo2rlenv.pipelines.base import Pipeline
from repo2rlenv.pipelines.registry import get_pipeline, pipeline_names, registry
from repo2rlenv.pipelines.test_synthesis.candidates import Candidate
from repo2rlenv.progress import Reporter
from repo2rlenv.dataset.taskdir import DatasetPaths

# Per pipeline: options that make a small, quick run on examples/minicart.
SMALL_RUN = {"test_synthesis": {"strategy": "mutation", "limit": 2, "seed": 1}}


def test_registry_keys_are_the_classes_own_names():
    reg = registry()
    assert reg and all(name == cls.name for name, cls in reg.items())
    assert set(SMALL_RUN) == set(pipeline_names()), "every pipeline needs a small run for the contract test"
    for name in reg:
        assert isinstance(get_pipeline(name), Pipeline)


def _generate(example_repo: Path, out: Path, name: str, sandbox: str, cache: Path, **extra) -> object:
    config = GenerateConfig(pipeline=name, repo=str(example_repo), out=out, sandbox=sandbox,
                            pipeline_opts={**SMALL_RUN[name], **extra}, cache_dir=cache)
    return run_generate(config, Reporter(quiet=True))


@pytest.mark.slow
@pytest.mark.parametrize("name", pipeline_names())
def test_pipeline_contract_docker(name, example_repo, tmp_path, docker_ready, r2e_cache):
    out = tmp_path / "dataset"
    result = _generate(example_repo, out, name, "docker", r2e_cache)
    assert len(result.emitted) == 2
    dataset = DatasetPaths(out)
    assert dataset.task_ids() == sorted(result.emitted)
    rows = read_manifest(dataset.manifest)
    assert [r.task_id for r in rows] == sorted(result.emitted)
    for row in rows:
        # Validated the way Harbor runs tasks: oracle 1.0, empty submission 0.0, own tests < 0.5.
        assert row.validation is not None and row.validation.ok and row.validation.mode == "docker"
        assert row.validation.oracle_reward == 1.0 and row.validation.empty_reward == 0.0
        task = dataset.task(row.task_id)
        cfg = tomllib.loads(task.task_toml.read_text())
        assert cfg["verifier"]["environment_mode"] == "separate"
        test_path = cfg["metadata"]["repo2env"]["test_synthesis"]["test_path"]
        assert cfg["artifacts"] == [f"/workspace/{test_path}"]
        # The agent's view (instruction + image context) holds nothing of B, the oracle or the verifier.
        seen = task.instruction.read_text() + "".join(
            p.read_text(errors="replace") for p in task.environment.rglob("*") if p.is_file())
        diff = task.broken_patch.read_text()
        removed = [ln[1:].strip() for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
        assert not any(line and line in seen and line not in task.instruction.read_text() for line in removed
                       if line not in (task.repo / diff.split("b/", 1)[1].split("\n", 1)[0]).read_text())
        for word in ("mutant", "mutation", row.operator or "-", "broken_patch", "verifier"):
            assert word not in task.instruction.read_text()
        assert not (task.repo / test_path).exists()
    cands = [Candidate.model_validate_json(line) for line in dataset.candidates.read_text().splitlines()]
    assert {c.task_id for c in cands if c.status == "emitted"} == set(result.emitted)
    # Candidates are stored with their diff, never B's whole files (a big module made lines of 100s of KB).
    stored = [dataset.candidates, *(out / ".r2e-state").glob("*.jsonl")]
    assert len(stored) == 2 and not any('"files_b"' in path.read_text() for path in stored)
    assert all(c.skip_reason for c in cands if c.status == "dropped")
    summary = json.loads(dataset.summary.read_text())
    assert summary["emitted"] == result.emitted

    # A rerun continues: published tasks are kept, none is made twice (with another number of gate
    # workers too: it changes no decision).
    again = _generate(example_repo, out, name, "docker", r2e_cache, gate_workers=1)
    assert sorted(again.emitted) == sorted(result.emitted)
    assert again.stages["gated"] == 0, "decisions of the first run are reused, not redone"
    assert again.stages["resumed"] == len(cands)


@pytest.mark.slow
def test_local_sandbox_end_to_end(example_repo, tmp_path, r2e_cache):
    out = tmp_path / "dataset"
    result = _generate(example_repo, out, "test_synthesis", "local", r2e_cache, limit=1)
    assert len(result.emitted) == 1
    (row,) = read_manifest(DatasetPaths(out).manifest)
    assert row.validation is not None and row.validation.ok and row.validation.mode == "local"

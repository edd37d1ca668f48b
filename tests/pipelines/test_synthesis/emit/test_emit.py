"""The emitter on a hand-made candidate: the tree's files, task.toml through its model, stable ids,
and nothing of B, the oracle or the verifier in what the agent sees."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from repo2rlenv.verifiers.bundle import VERIFIER_MODULES

from repo2rlenv.pipelines.test_synthesis.candidates import BaselineCoverage, Candidate
from repo2rlenv.pipelines.test_synthesis.emit.emit import TaskSpec, render_solve, task_id_for, write_task
from repo2rlenv.pysource.functions import extract_functions
from repo2rlenv.pipelines.test_synthesis.mine.mutants import unified_diff
from repo2rlenv.pipelines.test_synthesis.options import TestSynthesisOptions
from repo2rlenv.dataset.task_toml import TaskToml
from repo2rlenv.sandbox.install import plan_install
from repo2rlenv.verifiers.config_model import VerifierConfig

SOURCE = "def clamp(x, lo, hi):\n    if x < lo:\n        return lo\n    return min(x, hi)\n"
BROKEN = SOURCE.replace("x < lo", "x <= lo")
ORACLE = "from tinypkg.core import clamp\n\n\ndef test_clamp_at_low_bound():\n    assert clamp(0, 0, 5) == 0\n"


@pytest.fixture
def spec_and_repo(make_repo, tiny_package):
    root = make_repo(tiny_package("def test_x():\n    pass\n", SOURCE), commit=False)
    (func,) = extract_functions(SOURCE, "tinypkg/core.py", "tinypkg.core")
    cand = Candidate(candidate_id="c0ffee", strategy="mutation", function=func, operator="comparison_flip",
                     mutation_kind="comparison", line=2, files_b={"tinypkg/core.py": BROKEN},
                     diff=unified_diff("tinypkg/core.py", SOURCE, BROKEN), covering_tests=["tests/test_core.py::test_x"],
                     baseline=BaselineCoverage(function_lines=[2, 3, 4], covered_lines=[2, 4]), status="kept")
    task_id = task_id_for("acme__tiny", "abc123", cand)
    test_path = f"tests/test_r2e_{task_id.rsplit('-', 1)[1]}.py"
    config = VerifierConfig(submission=test_path, target_file="tinypkg/core.py", target_qualname="clamp",
                            function_lines=[2, 3, 4], coverage_targets=[3], baseline_full_coverage=False,
                            import_roots=[""])
    spec = TaskSpec(task_id=task_id, test_path=test_path, repo="acme/tiny", repo_slug="acme__tiny", ref="abc123",
                    pipeline_version="0.1.0", candidate=cand, oracle_source=ORACLE, oracle_kind="differential",
                    twin_kinds=["padding", "references"], verifier_config=config.model_dump(mode="json"),
                    base_image="repo2rlenv-base:bookworm", install=plan_install(root),
                    existing_test_files=["tests/test_core.py"])
    return spec, root


@pytest.mark.parametrize("mode", ["separate", "shared"])
def test_task_tree(spec_and_repo, tmp_path, mode):
    spec, root = spec_and_repo
    options = TestSynthesisOptions(harbor_verifier=mode)
    task = write_task(spec, options, root, tmp_path / "tasks")
    assert task.root == tmp_path / "tasks" / spec.task_id
    assert not [p for p in (tmp_path / "tasks").iterdir() if p.name.startswith(".")], "no staging dir left"
    for path in (task.task_toml, task.instruction, task.dockerfile, task.test_sh, task.verifier_config,
                 task.broken_patch, task.workspace_manifest, task.solve_sh,
                 task.solution / Path(spec.test_path).name, task.tests / "verifier.py"):
        assert path.is_file(), path
    text = task.task_toml.read_text()
    toml = TaskToml.from_toml(text)
    assert toml.task.name == f"repo2rlenv/{spec.task_id}"
    # Harbor 0.26's format, under its current key; a file in the older spelling reads the same.
    assert 'schema_version = "1.4"' in text and "\nversion =" not in text
    old = TaskToml.from_toml(text.replace('schema_version = "1.4"', 'version = "1.0"'))
    assert old.schema_version == "1.0" and old.model_copy(update={"schema_version": "1.4"}) == toml
    assert toml.metadata.repo2env.test_synthesis.touched_function == "tinypkg/core.py::clamp"
    assert toml.metadata.repo2env.test_synthesis.baseline_coverage == pytest.approx(2 / 3, abs=1e-4)
    assert toml.metadata.repo2env.test_synthesis.twin_kinds == ["padding", "references"]
    assert sorted(p.name for p in task.tests.glob("verifier*.py")) == sorted(VERIFIER_MODULES)
    if mode == "separate":
        assert toml.verifier.environment_mode == "separate"
        assert toml.artifacts == [f"/workspace/{spec.test_path}"]
    else:
        assert toml.verifier.environment_mode is None and toml.artifacts == []
        assert "environment_mode" not in task.task_toml.read_text()
    # What the agent sees names the function, not the change.
    seen = task.instruction.read_text() + task.dockerfile.read_text()
    assert "clamp" in seen and spec.test_path in seen
    for leak in ("<=", "comparison", "mutant", "mutation", "abc123", "broken", "oracle", ORACLE.splitlines()[-1].strip()):
        assert leak not in seen, leak
    assert (task.repo / "tinypkg/core.py").read_text() == SOURCE
    manifest = json.loads(task.workspace_manifest.read_text())
    assert "tinypkg/core.py" in manifest["files"] and not any(".git/" in p for p in manifest["files"])
    assert json.loads(task.verifier_config.read_text())["coverage_targets"] == [3]


def test_solve_sh_writes_the_oracle_exactly(spec_and_repo, tmp_path):
    spec, _ = spec_and_repo
    script = render_solve(spec).replace("/workspace", str(tmp_path / "ws"))
    subprocess.run(["bash", "-c", script], check=True)
    assert (tmp_path / "ws" / spec.test_path).read_text() == ORACLE


def test_task_id_is_stable_and_content_addressed(spec_and_repo):
    spec, _ = spec_and_repo
    cand = spec.candidate
    assert task_id_for("acme__tiny", "abc123", cand) == spec.task_id
    assert spec.task_id.startswith("acme__tiny-ts-") and len(spec.task_id.rsplit("-", 1)[1]) == 8
    other = cand.model_copy(update={"diff": cand.diff.replace("<=", ">")})
    assert task_id_for("acme__tiny", "abc123", other) != spec.task_id
    assert task_id_for("acme__tiny", "def456", cand) != spec.task_id


def test_rewriting_a_task_replaces_it_whole(spec_and_repo, tmp_path):
    spec, root = spec_and_repo
    options = TestSynthesisOptions()
    task = write_task(spec, options, root, tmp_path / "tasks")
    (task.root / "stray.txt").write_text("left from an older version")
    again = write_task(spec, options, root, tmp_path / "tasks")
    assert not (again.root / "stray.txt").exists()


def test_agent_network_guard(spec_and_repo, tmp_path):
    spec, root = spec_and_repo
    guarded = write_task(spec, TestSynthesisOptions(agent_network="no-network"), root, tmp_path / "a")
    assert TaskToml.from_toml(guarded.task_toml.read_text()).agent.network_mode == "no-network"
    plain = write_task(spec, TestSynthesisOptions(), root, tmp_path / "b")
    assert "network_mode" not in plain.task_toml.read_text()


def test_a_real_history_task_keeps_its_agent_off_the_network_by_default(spec_and_repo, tmp_path):
    spec, root = spec_and_repo
    assert spec.candidate.strategy == "mutation"
    real = spec.model_copy(update={"candidate": spec.candidate.model_copy(
        update={"strategy": "commit_pair", "commit": "a" * 40, "operator": None, "mutation_kind": None})})
    task = write_task(real, TestSynthesisOptions(), root, tmp_path / "a")
    assert TaskToml.from_toml(task.task_toml.read_text()).agent.network_mode == "no-network"
    asked = write_task(real, TestSynthesisOptions(agent_network="default"), root, tmp_path / "b")
    assert "network_mode" not in asked.task_toml.read_text()

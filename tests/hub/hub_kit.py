"""Hand-built datasets for the hub tests, written through the models the way `generate` writes them.

Task trees: task.toml through `TaskToml`, validation records through `ValidationSummary`, the manifest
through `write_manifest`, so no Docker is needed. Each task carries a file that is not UTF-8 (it goes to
the Hub as an LFS object and into the table as base64) and two executable scripts (their mode bits must
survive a round trip). Loaded by conftest.py from its path (pytest's importlib mode).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from repo2rlenv.dataset.manifest import ValidationSummary, save_validation, write_manifest
from repo2rlenv.dataset.task_toml import (
    AgentSection,
    EnvironmentSection,
    Metadata,
    Repo2EnvMeta,
    TaskInfo,
    TaskToml,
    TestSynthesisMeta,
    VerifierSection,
)
from repo2rlenv.dataset.taskdir import DatasetPaths
from repo2rlenv.validate import content_key

TOKEN = "hf_r2eTestTokenDoNotPrint1234567890"


@dataclass
class FakeTask:
    """What varies between hand-built tasks."""

    task_id: str
    repo: str = "acme/widgets"
    strategy: str = "mutation"
    mutation_kind: str | None = "compare"
    validation: bool | None = True  # True: passed, False: failed, None: never validated
    license_text: str | None = "MIT"
    instruction: str = "Write tests for `price`."


def write_task(dataset: DatasetPaths, spec: FakeTask) -> None:
    task = dataset.task(spec.task_id)
    test_path = f"tests/test_r2e_{spec.task_id[-4:]}.py"
    meta = TestSynthesisMeta(
        strategy=spec.strategy, touched_function="src/widgets/core.py::price", mutation_kind=spec.mutation_kind,
        operator="lt_to_le" if spec.mutation_kind else None, commit=None if spec.mutation_kind else "ab" * 20,
        baseline_coverage=0.5, baseline_full_coverage=False, reward_mode="gated", coverage_weight=0.5,
        min_new_tests=1, max_test_loc=200, oracle_kind="differential", test_path=test_path, aprime_level=2)
    config = TaskToml(
        task=TaskInfo(name=f"repo2rlenv/{spec.task_id}", description="Write pytest tests that pin down price."),
        metadata=Metadata(difficulty="medium", repo2env=Repo2EnvMeta(
            pipeline_version="0.1.0", repo=spec.repo, ref="v1.0", content_hash=f"hash-{spec.task_id}",
            test_synthesis=meta)),
        agent=AgentSection(timeout_sec=600), verifier=VerifierSection(timeout_sec=600, environment_mode="separate"),
        environment=EnvironmentSection(build_timeout_sec=900, cpus=1, memory_mb=2048, storage_mb=10240),
        artifacts=[f"/workspace/{test_path}"])
    files = {
        "task.toml": config.to_toml(),
        "instruction.md": spec.instruction + "\n",
        "environment/Dockerfile": "FROM repo2rlenv-base:bookworm\nCOPY repo /workspace\n",
        "environment/repo/src/widgets/core.py": "def price(n):\n    return n * 2 if n < 10 else n\n",
        "tests/verifier.py": "print('grading')\n",
        "tests/verifier_config.json": '{"test_path": "%s"}\n' % test_path,
        "tests/broken_patch.diff": "--- a/src/widgets/core.py\n+++ b/src/widgets/core.py\n-n < 10\n+n <= 10\n",
        f"solution/{Path(test_path).name}": "def test_price():\n    assert price(10) == 10\n",
    }
    if spec.license_text:
        files["environment/repo/pyproject.toml"] = (
            f'[project]\nname = "widgets"\nversion = "1.0"\nlicense = {{text = "{spec.license_text}"}}\n')
    for rel, text in files.items():
        path = task.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (task.repo / "src/widgets/logo.bin").write_bytes(bytes(range(256)) * 4)  # not UTF-8
    (task.repo / ".benchmarks").mkdir()  # empty: neither git nor the Hub keeps it
    for script, body in (("tests/test.sh", "#!/bin/bash\npython3 /tests/verifier.py\n"),
                         ("solution/solve.sh", "#!/bin/bash\ncp /solution/*.py /workspace/tests/\n")):
        (task.root / script).write_text(body)
        (task.root / script).chmod(0o755)
    if spec.validation is not None:
        save_validation(dataset, spec.task_id, ValidationSummary(
            ok=spec.validation, mode="docker", oracle_reward=1.0 if spec.validation else 0.4, empty_reward=0.0,
            existing_tests_reward=0.0, problems=[] if spec.validation else ["oracle scored 0.4"],
            content_key=content_key(task)))


def build_dataset(root: Path, specs: list[FakeTask]) -> Path:
    dataset = DatasetPaths(root)
    for spec in specs:
        write_task(dataset, spec)
    write_manifest(dataset)
    return root


DEFAULT_TASKS = (
    FakeTask("acme__widgets-ts-aaaa1111"),
    FakeTask("acme__widgets-ts-bbbb2222", mutation_kind="arith"),
    FakeTask("zeta__gears-ts-cccc3333", repo="zeta/gears", license_text="Apache-2.0"),
)


def tree_state(root: Path) -> dict[str, tuple[bytes, bool]]:
    """Every file under root with its bytes and executable bit, and every empty directory (as `dir/`)."""
    state = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_file():
            state[rel] = (path.read_bytes(), os.access(path, os.X_OK))
        elif not any(path.iterdir()):
            state[rel + "/"] = (b"", False)
    return state

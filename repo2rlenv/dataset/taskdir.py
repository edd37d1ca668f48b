"""The on-disk layout of one Harbor task and of a dataset of them; the only place that spells it.

```
<dataset>/
  manifest.jsonl           one ManifestRow per task (written by generate, updated by validate)
  candidates.jsonl         every candidate's fate
  tasks/<task_id>/
    task.toml              Harbor config + [metadata.repo2env] provenance
    instruction.md         what the agent must do
    environment/Dockerfile FROM the base image; the repo at A in /workspace
    environment/repo/      A's files (the build context)
    tests/test.sh          Harbor's entry point for grading
    tests/verifier*.py     the standalone verifier and its inputs (B's patch, sibling patches, config)
    solution/solve.sh      writes the oracle test file into the workspace
    solution/<test file>   the oracle
```
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # task_toml imports pydantic; the layout itself is plain paths
    from repo2rlenv.dataset.task_toml import TaskToml


class TaskPaths:
    """Paths of one task directory."""

    def __init__(self, root: Path):
        self.root = root

    @property
    def task_toml(self) -> Path:
        return self.root / "task.toml"

    def config(self) -> "TaskToml":
        """task.toml read through its model: the one reader, so a renamed key fails here and nowhere else.
        Raises OSError when the file is missing, ValueError (tomllib's and pydantic's) when it is malformed."""
        from repo2rlenv.dataset.task_toml import TaskToml

        return TaskToml.from_toml(self.task_toml.read_text(encoding="utf-8"))

    @property
    def instruction(self) -> Path:
        return self.root / "instruction.md"

    @property
    def environment(self) -> Path:
        return self.root / "environment"

    @property
    def dockerfile(self) -> Path:
        return self.environment / "Dockerfile"

    @property
    def repo(self) -> Path:
        return self.environment / "repo"

    @property
    def tests(self) -> Path:
        return self.root / "tests"

    @property
    def test_sh(self) -> Path:
        return self.tests / "test.sh"

    @property
    def verifier_config(self) -> Path:
        return self.tests / "verifier_config.json"

    @property
    def broken_patch(self) -> Path:
        return self.tests / "broken_patch.diff"

    @property
    def workspace_manifest(self) -> Path:
        return self.tests / "workspace_manifest.json"

    @property
    def siblings(self) -> Path:
        return self.tests / "siblings"

    @property
    def change(self) -> Path:
        """A real-history task's record of what its change said (commit, subject, added note and test
        lines): hidden like B, read by the audit."""
        return self.tests / "change.json"

    @property
    def solution(self) -> Path:
        return self.root / "solution"

    @property
    def solve_sh(self) -> Path:
        return self.solution / "solve.sh"

    def contains(self, path: Path) -> bool:
        """Whether `path` lies inside the task dir (resolving `..` and links)."""
        return path.resolve().is_relative_to(self.root.resolve())


class DatasetPaths:
    """Paths of a dataset directory."""

    def __init__(self, root: Path):
        self.root = root

    @property
    def tasks(self) -> Path:
        return self.root / "tasks"

    @property
    def manifest(self) -> Path:
        return self.root / "manifest.jsonl"

    @property
    def candidates(self) -> Path:
        return self.root / "candidates.jsonl"

    @property
    def baseline(self) -> Path:
        return self.root / "baseline.json"

    @property
    def summary(self) -> Path:
        return self.root / "summary.json"

    def task(self, task_id: str) -> TaskPaths:
        return TaskPaths(self.tasks / task_id)

    def task_ids(self) -> list[str]:
        if not self.tasks.is_dir():
            return []
        return sorted(p.name for p in self.tasks.iterdir() if p.is_dir() and not p.name.startswith("."))

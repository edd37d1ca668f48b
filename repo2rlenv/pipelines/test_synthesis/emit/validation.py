"""The validation each built task goes through before it counts as emitted (oracle 1.0, empty 0.0).

Both the ref's candidate loop and each commit's (`commit_driver`) build their validator here, so a task
is judged the same way wherever its pair was judged.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Protocol

from repo2rlenv.dataset.taskdir import DatasetPaths, TaskPaths
from repo2rlenv.pipelines.base import RunContext
from repo2rlenv.pipelines.test_synthesis.options import TestSynthesisOptions


class ValidationOutcome(Protocol):
    """What the pipeline reads of a validation (`validate.ValidationResult`)."""

    @property
    def ok(self) -> bool: ...

    @property
    def problems(self) -> list[str]: ...

    def a_crash(self) -> tuple[str, bool] | None:
        """(the line saying why, whether no case had run) when the oracle's run on A crashed; else None."""


# Validates the task written at a path (its root).
TaskValidator = Callable[[Path], ValidationOutcome]


def task_validator(ctx: RunContext, options: TestSynthesisOptions,
                   python: str | None = None) -> TaskValidator | None:
    """Validation as Harbor runs tasks (Docker), or process-level with the local sandbox (with `python`,
    default the sandbox's venv: a commit pair's task needs its own commit's environment). None when the
    options turn validation off."""
    if not options.validate_tasks:
        return None
    from repo2rlenv import validate
    from repo2rlenv.dataset.manifest import save_validation

    dataset = DatasetPaths(ctx.out_dir)
    docker = ctx.sandbox.name == "docker"
    python = None if docker else (python or ctx.sandbox.venv_python)  # type: ignore[attr-defined]

    def run(root: Path) -> validate.ValidationResult:
        task = TaskPaths(root)
        with ctx.reporter.in_stage("validate"):
            result = (validate.validate_task(task) if docker
                      else validate.validate_task_locally(task, python=python))
        if result.ok:
            save_validation(dataset, task.root.name,
                            validate.summarize(result, mode="docker" if docker else "local", task=task))
        return result

    return run

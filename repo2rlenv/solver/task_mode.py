"""Task mode: solve one Harbor task the way a Harbor agent would, then grade it with the task's verifier.

The agent's container is built from the task's `environment/`; the solver gets `instruction.md` and the
container, nothing else of the task (not task.toml, not tests/, not the solution). Grading is
`validate.TaskRunner.trial`: a fresh container receives only the declared artifact (separate mode) and
runs the task's own `tests/test.sh`.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from repo2rlenv.llm.base import ChatClient
from repo2rlenv.llm.ledger import Ledger
from repo2rlenv.sandbox.base import Limits
from repo2rlenv.solver.config import CallRole, SolverConfig
from repo2rlenv.solver.edits import OnlyPaths
from repo2rlenv.solver.errors import SolverInputError
from repo2rlenv.solver.events import SolverHooks, Trajectory
from repo2rlenv.solver.loop import Solver
from repo2rlenv.solver.result import SolveResult
from repo2rlenv.solver.target import target_from_instruction
from repo2rlenv.dataset.taskdir import TaskPaths
from repo2rlenv.validate import RunOutcome, TaskRunner, build_task_image

# The agent container's wall clock per command; the loop's own timeouts are shorter.
SESSION_TIMEOUT_SEC = 900


class TaskSolve(BaseModel):
    """A solve of one task and the verifier's grade of what it wrote."""

    model_config = ConfigDict(extra="forbid")

    task_id: str
    solve: SolveResult
    grade: RunOutcome = Field(description="The task's verifier on the submission: reward and details.")


def check_task_dir(task: TaskPaths) -> None:
    """`SolverInputError` unless `task` looks like a Harbor task with an instruction and an environment."""
    for need in (task.task_toml, task.instruction, task.dockerfile, task.test_sh):
        if not need.is_file():
            raise SolverInputError(f"not a task directory (no {need.relative_to(task.root)}): {task.root}")


def task_limits(task: TaskPaths) -> Limits:
    """The container limits the task asks Harbor for."""
    env = task.config().environment
    return Limits(timeout_sec=SESSION_TIMEOUT_SEC, memory_mb=env.memory_mb, cpus=env.cpus, pids=1024)


def solve_task(task: TaskPaths, config: SolverConfig, clients: dict[CallRole, ChatClient], ledger: Ledger, *,
               docker: Any, hooks: SolverHooks | None = None, trajectory: Trajectory | None = None,
               spent_before_usd: float = 0.0) -> TaskSolve:
    """Build the task's image, run the solver in a fresh container of it, grade the submission."""
    check_task_dir(task)
    instruction = task.instruction.read_text(encoding="utf-8")
    target = target_from_instruction(instruction)
    image = build_task_image(docker, task)
    runner = TaskRunner(docker, task, image, task_limits(task))
    solver = Solver(clients, config, ledger, hooks=hooks, trajectory=trajectory, spent_before_usd=spent_before_usd)
    box: dict[str, SolveResult] = {}

    def agent(session: Any) -> None:
        box["result"] = solver.solve(instruction, target, session, OnlyPaths([target.test_path]))

    grade = runner.trial(agent)
    return TaskSolve(task_id=task.root.name, solve=box["result"], grade=grade)

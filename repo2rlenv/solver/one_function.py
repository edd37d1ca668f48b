"""Solving one function of a repo from Python: what `Solver.solve_function` does with its defaults.

The CLI's diff mode does the same per changed function; this is the one-function case for embedding
users, so their script needs no sandbox, policy or task text of its own: the repo is prepared in a local
sandbox (a venv on the host) unless another sandbox is given, and the solver may write new files under
`tests/` only (the policy diff mode uses).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from repo2rlenv.sandbox.base import Limits
from repo2rlenv.solver.diff_mode import SolvesOne, chosen_functions, task_text
from repo2rlenv.solver.edits import NewTestFiles
from repo2rlenv.solver.result import SolveResult

# The local sandbox's limits when none is given: a function's tests and the repo's suite run well within.
DEFAULT_LIMITS = Limits(timeout_sec=300, memory_mb=2048)


def solve_function(solver: SolvesOne, repo: Path, target: str, *, sandbox: Any = None, store: Any = None,
                   session_id: str | None = None) -> SolveResult:
    """Write tests for `target` (`path.py::qualname`) of the repo at `repo`."""
    (change,) = chosen_functions(repo, "", [target])
    existing = [p.relative_to(repo).as_posix() for p in repo.glob("tests/**/*") if p.is_file()]
    if sandbox is None:
        from repo2rlenv.sandbox.local import LocalSandbox
        from repo2rlenv.sources import default_cache_dir

        sandbox = LocalSandbox(limits=DEFAULT_LIMITS, cache_dir=default_cache_dir())
    sandbox.prepare(repo)
    with sandbox.open() as session:
        return solver.solve(task_text(change), change.target, session, NewTestFiles(existing), store=store,
                            session_id=session_id)

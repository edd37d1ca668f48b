"""The reference solver: an interactive test-writing repair agent (plan → write → run → repair).

Embedding it takes one import::

    from repo2rlenv.solver import Solver

    solver = Solver.for_model("openai/gpt-4o-mini")
    result = solver.solve_function("path/to/repo", "pkg/mod.py::func")
    print(result.stop_reason, sorted(result.files))

Entry points: `Solver` (`loop.Solver`, the library), `task_mode.solve_task` and `diff_mode.solve_diff` (the
two modes of `repo2rlenv solve`), `harbor_agent.R2ESolverAgent` (Harbor's `--agent-import-path`; importable
only where Harbor is installed). Importing this package loads neither litellm nor docker nor harbor: the
names below load on first use, so `repo2rlenv --help` stays fast.
"""

from __future__ import annotations

from typing import Any

# Public name → the module defining it. (No TYPE_CHECKING imports of them here: `loop` imports this
# package, and the import-rule test counts such an import as the cycle it would be.)
_LAZY = {
    "Solver": "repo2rlenv.solver.loop",
    "SolverConfig": "repo2rlenv.solver.config",
    "SolverHooks": "repo2rlenv.solver.events",
    "Trajectory": "repo2rlenv.solver.events",
    "SolveResult": "repo2rlenv.solver.result",
    "StopReason": "repo2rlenv.solver.result",
}
__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_LAZY[name]), name)

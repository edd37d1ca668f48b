"""Fixtures of the solver tests: the scripted model server (tests/llm, reused by path), a local sandbox
prepared once for the tiny package of `solver_kit`, and `solve_tiny` to drive the loop through it.
tests/eval/conftest.py re-exports the first ones.
"""

from __future__ import annotations

import runpy
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

TESTS = Path(__file__).resolve().parents[1]

# Run by path (test dirs are not packages); the server module itself is shared through sys.modules.
_llm = SimpleNamespace(**runpy.run_path(str(TESTS / "llm" / "conftest.py")))
kit = SimpleNamespace(**runpy.run_path(str(TESTS / "solver" / "solver_kit.py")))

scripted = _llm.scripted
scripted_server = _llm.scripted_server


@pytest.fixture(scope="session")
def solver_kit() -> SimpleNamespace:
    return kit


@pytest.fixture(scope="session")
def scripted_module() -> Any:
    """The scripted server module, for fixtures wider than one test (`scripted` is per test)."""
    return _llm.load_scripted_server()


@pytest.fixture(scope="session")
def tiny_sandbox(tmp_path_factory: pytest.TempPathFactory, r2e_cache: Path):
    """A local sandbox (venv with pytest + coverage) prepared once for the tiny package."""
    from repo2rlenv.sandbox.base import Limits
    from repo2rlenv.sandbox.local import LocalSandbox

    repo = tmp_path_factory.mktemp("tinyshop") / "repo"
    for rel, text in kit.TINY_FILES.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    sandbox = LocalSandbox(limits=Limits(timeout_sec=120, memory_mb=2048), cache_dir=r2e_cache)
    sandbox.prepare(repo)
    return sandbox


class TinySolve:
    """Runs the solver on the tiny package against a scripted server; keeps what it needs to assert on."""

    def __init__(self, sandbox: Any, tmp_path: Path):
        self.sandbox = sandbox
        self.tmp_path = tmp_path
        self.ledger: Any = None
        self.trajectory_path = tmp_path / "trajectory.jsonl"
        self.events: list[tuple[str, Any]] = []

    def __call__(self, server: Any, *, stream: bool = False, **settings: Any):
        from repo2rlenv.llm import Ledger
        from repo2rlenv.solver.clients import build_clients
        from repo2rlenv.solver.config import SolverConfig
        from repo2rlenv.solver.edits import OnlyPaths
        from repo2rlenv.solver.events import SolverHooks, Trajectory
        from repo2rlenv.solver.loop import Solver
        from repo2rlenv.solver.target import target_from_instruction

        config = SolverConfig.model_validate({"model": kit.MODEL, "base_url": server.base_url,
                                              "api_key_env": _llm.KEY_ENV, "llm_max_retries": 0,
                                              "test_timeout_sec": 30, **settings})
        self.ledger = Ledger(self.tmp_path / "ledger.jsonl")
        hooks = SolverHooks(
            on_reply=lambda role, text: self.events.append(("stream", role)),
            on_tool_call=lambda e: self.events.append(("tool_call", e.tool)),
            on_tool_result=lambda e: self.events.append(("tool_result", e.tool)),
            on_round_end=lambda s: self.events.append(("round_end", s)),
            on_finish=lambda r: self.events.append(("finish", r.stop_reason.value)),
            on_stream=(lambda role, piece: self.events.append(("piece", (role, piece)))) if stream else None)
        solver = Solver(build_clients(config, self.ledger), config, self.ledger, hooks=hooks,
                        trajectory=Trajectory(self.trajectory_path))
        text = kit.instruction()
        target = target_from_instruction(text)
        with self.sandbox.open() as session:
            result = solver.solve(text, target, session, OnlyPaths([target.test_path]))
            self.workspace_file = (Path(session.workspace) / kit.TEST_PATH)
            self.final_text = self.workspace_file.read_text() if self.workspace_file.exists() else None
        return result


@pytest.fixture
def solve_tiny(tiny_sandbox: Any, tmp_path: Path) -> Callable[..., Any]:
    """`solve_tiny(server, **SolverConfig overrides)` → SolveResult; `.ledger`, `.events`, `.final_text` after."""
    return TinySolve(tiny_sandbox, tmp_path)

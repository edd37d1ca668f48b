"""The reference solver as a Harbor agent: `harbor run --agent-import-path repo2rlenv.solver.harbor_agent:R2ESolverAgent`.

It runs the same loop as `repo2rlenv solve` inside a Harbor trial: the instruction names the target, the
trial's environment is the sandbox (through `HarborSession`), and the model is Harbor's `-m` model.
Settings come as agent kwargs (`--ak key=value`):
- `llm_base_url`: an OpenAI-compatible endpoint (Harbor's own `--base-url` is for agents that route
  through Harbor; this agent calls the model itself, through litellm);
- `api_key_env`: the environment variable with the key (default: litellm's provider default);
- `solver_config`: a solver TOML/YAML file (the `--config` of `repo2rlenv solve`);
- `max_rounds`, `plan`, `max_spend_usd`, `token_budget`: override single settings.
The ledger, the trajectory and the solve result go to the trial's agent log dir.

Only importable where Harbor is installed (Harbor needs Python >= 3.12; scripts/harbor_setup.sh).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from harbor.agents.base import BaseAgent
from harbor.environments.base import BaseEnvironment
from harbor.models.agent.context import AgentContext

from repo2rlenv import __version__
from repo2rlenv.llm.ledger import Ledger
from repo2rlenv.solver.clients import build_clients
from repo2rlenv.solver.config import SolverConfig, load_solver_config
from repo2rlenv.solver.edits import OnlyPaths
from repo2rlenv.solver.events import Trajectory
from repo2rlenv.solver.harbor_session import HarborSession
from repo2rlenv.solver.loop import Solver
from repo2rlenv.solver.target import target_from_instruction

AGENT_NAME = "repo2rlenv-solver"
_OVERRIDES = ("max_rounds", "plan", "max_spend_usd", "token_budget")


class R2ESolverAgent(BaseAgent):
    """repo2rlenv's reference test-writing repair agent."""

    def __init__(self, logs_dir: Path, model_name: str | None = None, *args: Any, llm_base_url: str | None = None,
                 api_key_env: str | None = None, solver_config: str | None = None, **kwargs: Any):
        overrides = {k: kwargs.pop(k) for k in _OVERRIDES if k in kwargs}
        super().__init__(logs_dir, model_name, *args, **kwargs)
        self._flags: dict[str, Any] = {"model": model_name, "base_url": llm_base_url, "api_key_env": api_key_env,
                                       **overrides}
        self._config_file = Path(solver_config) if solver_config else None

    @staticmethod
    def name() -> str:
        return AGENT_NAME

    def version(self) -> str:
        return __version__

    def solver_config(self) -> SolverConfig:
        return load_solver_config(self._config_file, dict(self._flags))

    async def setup(self, environment: BaseEnvironment) -> None:
        """Nothing to install: the loop runs on the host and only execs pytest in the environment."""

    async def run(self, instruction: str, environment: BaseEnvironment, context: AgentContext) -> None:
        config = self.solver_config()
        target = target_from_instruction(instruction)
        session = HarborSession(environment, asyncio.get_running_loop())
        await session.prepare()
        self.logs_dir.mkdir(parents=True, exist_ok=True)
        ledger = Ledger(self.logs_dir / "ledger.jsonl")
        solver = Solver(build_clients(config, ledger), config, ledger,
                        trajectory=Trajectory(self.logs_dir / "trajectory.jsonl"))
        result = await asyncio.to_thread(solver.solve, instruction, target, session, OnlyPaths([target.test_path]))
        (self.logs_dir / "solve-result.json").write_text(result.model_dump_json(indent=2), encoding="utf-8")
        context.n_input_tokens = result.prompt_tokens
        context.n_output_tokens = result.completion_tokens
        context.cost_usd = result.cost_usd
        context.metadata = {"stop_reason": result.stop_reason.value, "rounds": result.rounds, "calls": result.calls,
                            "detail": result.detail,
                            "tests": result.last_report.summary() if result.last_report else None}

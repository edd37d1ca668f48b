"""The solver's settings: model routing per call role, round and budget limits, feedback sizes.

Read from an optional TOML/YAML file (keys as below, `routing` and `prices` as tables) with command-line
flags on top. Every default carries a comment saying why it is what it is.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from repo2rlenv.config import GenerateConfig, describe_validation_error, load_config_file
from repo2rlenv.llm.prices import ModelPrice
from repo2rlenv.solver.errors import SolverInputError


class CallRole(StrEnum):
    """What a model call is for; each role can be routed to its own model."""

    PLAN = "plan"  # one call up front: read the function, list behaviours worth pinning down
    GENERATE = "generate"  # write the test file from the plan
    REPAIR = "repair"  # fix the file from test feedback, or say VERDICT: CODE_BUG

    @property
    def ledger_role(self) -> str:
        return f"solver.{self.value}"


class ModelRouting(BaseModel):
    """Model id per call role; None means the default model (`SolverConfig.model`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # TestPilot-style split: a large model plans once, a small one writes and repairs many times.
    plan: str | None = Field(None, description="Model for the planning call.")
    generate: str | None = Field(None, description="Model for the first test file.")
    repair: str | None = Field(None, description="Model for repair calls.")


class SolverConfig(BaseModel):
    """Everything one solve needs besides the task itself."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = Field(description="Default litellm model id (provider/model), e.g. openai/gpt-4o-mini.")
    routing: ModelRouting = Field(default_factory=ModelRouting, description="Per-role model overrides.")
    base_url: str | None = Field(None, description="OpenAI-compatible base URL for every model.")
    api_key_env: str | None = Field(None, description="Environment variable holding the API key.")
    prices: dict[str, ModelPrice] = Field(default_factory=dict, description="USD per 1M tokens by model id.")
    plan: bool = Field(True, description="Make the planning call before the first file.")
    # Four generate/repair rounds: TestPilot saw most repairs succeed in the first two or three.
    max_rounds: int = Field(4, ge=1, le=50, description="Generate + repair calls at most.")
    # Enough for a plan and four rounds on a mid-sized module; an RL-scale eval sets its own.
    token_budget: int | None = Field(200_000, ge=1, description="Prompt + completion tokens per solve.")
    max_spend_usd: float | None = Field(None, ge=0, description="Spend ceiling, checked before every call.")
    llm_timeout_sec: float = Field(180.0, gt=0, allow_inf_nan=False, description="Wall clock of one HTTP attempt.")
    llm_max_retries: int = Field(2, ge=0, description="Retries of a failed call (429, 5xx, timeouts).")
    temperature: float | None = Field(None, ge=0, description="Sampling temperature; None = the provider's.")
    max_tokens: int | None = Field(None, ge=1, description="Cap on one reply's tokens.")
    # The verifier's own per-run limit is 120 s; a test file slower than that scores nothing anyway.
    test_timeout_sec: float = Field(120.0, gt=0, allow_inf_nan=False,
                                    description="Wall clock of one run of the agent's tests (`--timeout`).")
    measure_baseline: bool = Field(True, description="Run the existing suite once to find uncovered lines.")
    coverage: bool = Field(True, description="Measure coverage of the function (`--no-coverage`: pass/fail only; a "
                                             "solve then needs only passing tests that were run).")
    pytest_k: str | None = Field(None, description="`-k` expression for every pytest run: the existing suite's "
                                                   "baseline, the written tests and each repair (`--pytest-k`).")
    pytest_m: str | None = Field(None, description="`-m` marker expression for every pytest run (`--pytest-m`).")
    baseline_timeout_sec: float = Field(600.0, gt=0, allow_inf_nan=False,
                                        description="Wall clock of the existing suite's run.")
    # Three failures, each cut to ~1500 characters: enough to fix them, small enough to keep the prompt short.
    failures_shown: int = Field(3, ge=1, description="Failures whose text a repair prompt shows.")
    failure_chars: int = Field(1500, ge=200, description="Characters kept of each failure's text.")
    # The current file is in every feedback turn, so older turns add little but tokens.
    history_rounds: int = Field(2, ge=1, description="Earlier reply/feedback pairs kept in repair prompts.")
    lint: bool = Field(True, description="Pre-check the file with the verifier's static lint before running it.")

    def selection_args(self) -> list[str]:
        """pytest arguments that narrow every run to the chosen tests."""
        return [*(["-k", self.pytest_k] if self.pytest_k else []), *(["-m", self.pytest_m] if self.pytest_m else [])]

    def unverified(self) -> list[str]:
        """What a solve under these settings does not check, in words for its report."""
        out = []
        if not self.coverage:
            out.append("coverage of the function (--no-coverage): tests were judged by pass/fail alone")
        if self.pytest_k:
            out.append(f"tests that -k {self.pytest_k!r} deselects (in the existing suite and the written files)")
        if self.pytest_m:
            out.append(f"tests that -m {self.pytest_m!r} deselects (in the existing suite and the written files)")
        return out

    def model_for(self, role: CallRole) -> str:
        return getattr(self.routing, role.value) or self.model

    def models(self) -> list[str]:
        """Distinct model ids this config calls, default first."""
        return list(dict.fromkeys([self.model, *(self.model_for(r) for r in CallRole)]))


# Keys named as the flags (`--llm`, `--llm-base-url`) → the fields they set.
FILE_ALIASES = {"llm": "model", "llm_base_url": "base_url"}


def load_solver_config(config_file: Path | None, flags: dict[str, Any]) -> SolverConfig:
    """Defaults < file < flags (None flags are ignored); one `SolverInputError` line when invalid."""
    values: dict[str, Any] = load_config_file(config_file) if config_file else {}
    # The file may use the flags' names, as generate's config does: one file serves all three commands.
    for flag_name, field in FILE_ALIASES.items():
        if flag_name in values:
            if field in values:
                raise SolverInputError(f"the config file sets both {flag_name!r} and {field!r}: keep one")
            values[field] = values.pop(flag_name)
    # Keys of generate's settings that a shared file may hold; solve and eval have no use for them.
    for key in (set(GenerateConfig.model_fields) - set(SolverConfig.model_fields) - set(FILE_ALIASES)) & set(values):
        values.pop(key)
    routing = dict(values.pop("routing", None) or {})
    routing.update(flags.pop("routing", None) or {})
    values.update({k: v for k, v in flags.items() if v is not None})
    if routing:
        values["routing"] = {k: v for k, v in routing.items() if v is not None}
    if not values.get("model"):
        raise SolverInputError("no model given: pass --llm provider/model (or `model` in the config file)")
    try:
        return SolverConfig.model_validate(values)
    except ValidationError as exc:
        raise SolverInputError(describe_validation_error(exc, what="solver setting")) from exc


def parse_seconds(text: str, flag: str) -> float:
    """A flag's number of seconds: positive and finite; fractions (2.5) and scientific notation (1e3) are
    numbers too. Anything else is one `SolverInputError` line, before any work starts."""
    import math

    try:
        value = float(text.strip())
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise SolverInputError(f"{flag} must be a positive finite number of seconds (e.g. 30, 2.5, 1e3), got {text!r}")
    return value


def host_python(given: str) -> str:
    """`--python`: an interpreter, or a venv (its bin/python), that runs; else one `SolverInputError` line."""
    import subprocess
    from pathlib import Path

    path = Path(given)
    if path.is_dir():
        path = path / "bin" / "python"
    try:
        proc = subprocess.run([str(path), "-c", "import sys, venv; print(sys.version_info[0])"], capture_output=True,
                              text=True, timeout=30)
        ok = proc.returncode == 0 and proc.stdout.strip() == "3"
    except (OSError, subprocess.TimeoutExpired):
        ok = False
    if not ok:
        raise SolverInputError(f"--python must be a Python 3 interpreter (with venv) or a venv directory, got {given!r}")
    return str(path)

"""Model prices the user supplies: the only source of the ledger's costs.

Nothing here guesses. litellm ships a price table, but it is out of date for some models, silent for
self-hosted ones (a vLLM endpoint, an OpenAI-compatible gateway) and wrong for negotiated rates, so a
cost is computed only from a price the user gave for that exact model id; otherwise it is None.

Sources, later ones winning for the same model:
- a mapping (from the config file): ``{"openai/gpt-4o-mini": {"input_per_mtok": 0.15, "output_per_mtok": 0.6}}``;
- the environment: ``R2E_PRICE_<MODEL>="<input>,<output>"`` in USD per million tokens, where ``<MODEL>`` is
  the model id upper-cased with every run of other characters than letters and digits turned into ``_``
  (``openai/gpt-4o-mini`` → ``R2E_PRICE_OPENAI_GPT_4O_MINI``). The environment wins because it is set
  for one invocation, like a flag.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from repo2rlenv.llm.errors import LLMConfigError

ENV_PREFIX = "R2E_PRICE_"
PER_TOKENS = 1_000_000


class ModelPrice(BaseModel):
    """USD per million input and output tokens of one model."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input_per_mtok: float = Field(ge=0, description="USD per 1M prompt tokens.")
    output_per_mtok: float = Field(ge=0, description="USD per 1M completion tokens.")

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.input_per_mtok + completion_tokens * self.output_per_mtok) / PER_TOKENS


class Prices(BaseModel):
    """Prices by exact model id (the string given to `--llm`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    models: dict[str, ModelPrice] = Field(default_factory=dict, description="Model id → price.")

    def for_model(self, model: str) -> ModelPrice | None:
        return self.models.get(model)

    def cost(self, model: str, prompt_tokens: int, completion_tokens: int) -> float | None:
        price = self.for_model(model)
        return None if price is None else price.cost(prompt_tokens, completion_tokens)

    @classmethod
    def load(
        cls,
        models: Iterable[str],
        *,
        config: Mapping[str, Any] | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> Prices:
        """Prices from a config mapping, then the environment's ``R2E_PRICE_*`` for each of ``models``."""
        table: dict[str, ModelPrice] = {}
        for model, raw in (config or {}).items():
            try:
                table[str(model)] = ModelPrice.model_validate(raw)
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(map(str, first["loc"]))
                raise LLMConfigError(f"price of {model!r}: {first['msg']} at {where}") from None
        env = os.environ if environ is None else environ
        for model in models:
            name = env_var(model)
            if name in env:
                table[model] = parse_env_price(name, env[name])
        return cls(models=table)


def env_var(model: str) -> str:
    """The environment variable holding ``model``'s price."""
    return ENV_PREFIX + re.sub(r"[^A-Z0-9]+", "_", model.upper()).strip("_")


def parse_env_price(name: str, text: str) -> ModelPrice:
    """``"<input>,<output>"`` USD per million tokens; one clear line when it is anything else."""
    parts = [p.strip() for p in text.split(",")]
    try:
        if len(parts) != 2:
            raise ValueError
        return ModelPrice(input_per_mtok=float(parts[0]), output_per_mtok=float(parts[1]))
    except (ValueError, ValidationError):
        raise LLMConfigError(
            f"{name}={text!r}: expected '<input>,<output>' USD per million tokens, e.g. '0.15,0.60'"
        ) from None

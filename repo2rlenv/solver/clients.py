"""Model clients for a solve: one `LLMClient` per distinct model, all recording into one ledger."""

from __future__ import annotations

from repo2rlenv.llm.base import ChatClient
from repo2rlenv.llm.client import CircuitBreaker, LLMClient
from repo2rlenv.llm.ledger import Ledger
from repo2rlenv.llm.prices import Prices
from repo2rlenv.solver.config import CallRole, SolverConfig


def build_clients(config: SolverConfig, ledger: Ledger, *, spent_before_usd: float = 0.0,
                  prices: Prices | None = None, breaker: CircuitBreaker | None = None) -> dict[CallRole, ChatClient]:
    """Clients by role. The ceiling each client enforces (before every HTTP attempt, retries included)
    is what is left of `max_spend_usd` after `spent_before_usd`; `breaker` (default: one for these
    clients) stops the solve, or the eval sharing it, after that many calls in a row failed for good."""
    breaker = breaker or CircuitBreaker()
    prices = prices or Prices.load(config.models(), config={m: p.model_dump() for m, p in config.prices.items()})
    ceiling = None if config.max_spend_usd is None else max(0.0, config.max_spend_usd - spent_before_usd)
    by_model: dict[str, LLMClient] = {}
    for model in config.models():
        by_model[model] = LLMClient(model, base_url=config.base_url, api_key_env=config.api_key_env,
                                    timeout_sec=config.llm_timeout_sec, max_retries=config.llm_max_retries,
                                    prices=prices, ledger=ledger, max_spend_usd=ceiling,
                                    temperature=config.temperature, max_tokens=config.max_tokens, breaker=breaker)
    return {role: by_model[config.model_for(role)] for role in CallRole}

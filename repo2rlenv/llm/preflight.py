"""Before any container starts: can each configured model be called at all?

`generate --llm`, `solve` and `eval` all call `preflight` first, so a wrong setting costs seconds, not an
image build and a baseline: the model id must name a provider litellm knows, the key must be in the
environment (the variable `--api-key-env` names, or the provider's own), and the endpoint must answer one
tiny call (one output token). Any of these failing is the user's to fix: `LLMConfigError`, one line,
exit code 2, nothing written. A rate limit (429) is an answer — the key and model are accepted — so it
passes with a warning; the run's own retries deal with it.

The tiny calls are recorded in a ledger of their own, which the caller appends to its run's ledger once
that exists (their cost counts like any other call's).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from repo2rlenv.llm.client import LLMClient, connection_cause
from repo2rlenv.llm.errors import LLMCallFailed, LLMConfigError
from repo2rlenv.llm.ledger import Ledger, LedgerEntry
from repo2rlenv.llm.prices import Prices

PREFLIGHT_ROLE = "preflight"
# Marks the request so a recorded or scripted server can tell it from a run's calls.
PREFLIGHT_PROMPT = "repo2rlenv preflight: reply with the single word OK."
# Long enough for a cold local server to answer one token; short enough that a hung endpoint is named
# within a minute instead of after the run's full per-call timeout and retries.
PREFLIGHT_TIMEOUT_SEC = 45.0


@dataclass(frozen=True)
class ModelSetting:
    """How one model is reached."""

    model: str
    base_url: str | None = None
    api_key_env: str | None = None


def provider_problem(model: str, base_url: str | None) -> str | None:
    """Why litellm cannot tell the provider of `model` (None when it can)."""
    from repo2rlenv.llm.client import _litellm

    if not model or model != model.strip() or " " in model:
        return f"--llm {model!r} is not a model id: write provider/model, e.g. openai/gpt-4o-mini"
    try:
        _litellm().get_llm_provider(model=model, api_base=base_url)
    except Exception:  # litellm raises its BadRequestError (and others) for an unknown provider
        hint = f"openai/{model.split('/')[-1]}" if base_url else "openai/gpt-4o-mini"
        return (f"--llm {model}: litellm cannot tell which provider serves it; write provider/model, "
                f"e.g. {hint}{' for an OpenAI-compatible --llm-base-url' if base_url else ''}")
    return None


def missing_key(setting: ModelSetting) -> str | None:
    """The line saying which key is missing, or None when a key is there (or none is needed)."""
    if setting.api_key_env is not None:
        if not os.environ.get(setting.api_key_env):
            return f"{setting.api_key_env} is not set: it should hold the API key for {setting.model} (--api-key-env)"
        return None
    if setting.base_url is not None:
        return None  # a self-hosted OpenAI-compatible server often needs no key; a 401 would say otherwise
    from repo2rlenv.llm.client import _litellm

    report = _litellm().validate_environment(model=setting.model)
    missing = [k for k in report.get("missing_keys", []) if k]
    if missing:
        names = " and ".join(f"${k}" for k in missing)
        return (f"{setting.model} needs {names} in the environment (or name the variable holding the key "
                "with --api-key-env)")
    return None


def _where(setting: ModelSetting) -> str:
    return f"{setting.model} at {setting.base_url}" if setting.base_url else setting.model


def check_answers(setting: ModelSetting, ledger: Ledger, *, timeout_sec: float = PREFLIGHT_TIMEOUT_SEC,
                  prices: Prices | None = None, warn: Callable[[str], None] | None = None) -> None:
    """One tiny call to `setting`; `LLMConfigError` naming the cause when the endpoint cannot be used."""
    client = LLMClient(setting.model, base_url=setting.base_url, api_key_env=setting.api_key_env,
                       timeout_sec=timeout_sec, max_retries=0, prices=prices or Prices(), ledger=ledger,
                       max_tokens=1, temperature=0)
    try:
        client.complete([{"role": "user", "content": PREFLIGHT_PROMPT}], role=PREFLIGHT_ROLE)
    except LLMConfigError as exc:
        raise LLMConfigError(f"model check: {exc}") from exc
    except LLMCallFailed as exc:
        status = ledger.entries[-1].status_code if ledger.entries else None
        if status == 429:
            if warn is not None:
                warn(f"{_where(setting)} is rate-limiting (429) already; the run's calls will wait and retry")
            return
        cause = connection_cause(exc.__cause__, timeout_sec)
        if cause is not None:
            raise LLMConfigError(f"model check: {_where(setting)} {cause} (is the server up, and --llm-base-url "
                                 "right?)") from exc
        raise LLMConfigError(f"model check: {_where(setting)} failed one tiny call: {exc}") from exc


def preflight(settings: list[ModelSetting], *, timeout_sec: float = PREFLIGHT_TIMEOUT_SEC,
              prices: Prices | None = None, warn: Callable[[str], None] | None = None) -> list[LedgerEntry]:
    """Check every distinct model setting (id, key, one tiny call); returns the calls' ledger entries."""
    ledger = Ledger()
    for setting in dict.fromkeys(settings):
        for problem in (provider_problem(setting.model, setting.base_url), missing_key(setting)):
            if problem is not None:
                raise LLMConfigError(problem)
    for setting in dict.fromkeys(settings):
        check_answers(setting, ledger, timeout_sec=timeout_sec, prices=prices, warn=warn)
    return ledger.entries

"""A thin client over litellm: one chat completion per `complete`, with timeouts, retries and the ledger.

litellm speaks every provider (``openai/…``, ``anthropic/…``, an OpenAI-compatible ``base_url`` such as
vLLM); this wrapper adds what the pipeline needs around it:
- a wall-clock timeout on every HTTP attempt, and litellm's and the OpenAI SDK's own retries turned off
  so that this loop alone decides (and the ledger sees every attempt);
- retries on 429, 408/409, 5xx, connection errors and timeouts, with exponential backoff and jitter,
  waiting what a ``Retry-After`` header asks for instead when the server sends one;
- the spend ceiling, checked against the ledger before every attempt: past it, `SpendLimitReached` is
  raised and nothing is sent (the ceiling can be overshot by at most the one call that crosses it);
- a 401/403/404 (bad key, unknown model or endpoint) or a key litellm finds missing raises
  `LLMConfigError`: no retry and no later candidate can fix it;
- a `CircuitBreaker` shared by a run's clients turns N calls in a row that failed for good into
  `ModelUnavailable`, which stops the run instead of letting every later candidate or task fail alike;
- an OpenAI-compatible `base_url` with no key configured gets a placeholder key (a self-hosted server
  usually checks none; the OpenAI SDK refuses to send without one).

litellm takes seconds to import, so it is imported inside the call path only: `repo2rlenv --help` and
runs without a model never load it.
"""

from __future__ import annotations

import os
import random
import re
import threading
import time
from collections.abc import Callable
from email.utils import parsedate_to_datetime
from enum import Enum
from types import ModuleType
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from repo2rlenv.llm.base import (
    Completion,
    Message,
    Usage,
    estimate_prompt_tokens,
    estimate_text_tokens,
    request_key,
)
from repo2rlenv.llm.errors import LLMCallFailed, LLMConfigError, ModelUnavailable, SpendLimitReached
from repo2rlenv.llm.ledger import Ledger, LedgerEntry
from repo2rlenv.llm.prices import Prices, env_var

MAX_ERROR_TEXT = 300
RETRY_STATUS = frozenset({408, 409, 429})  # plus every 5xx
CONFIG_STATUS = frozenset({401, 403, 404})
# litellm reports a key it could not find as a 500 with one of these texts: the user's to fix, never retried.
_MISSING_KEY_TEXTS = ("Missing credentials", "api_key client option must be set")
# Sent as the key to an OpenAI-compatible base URL when none is configured (see the module docstring).
PLACEHOLDER_KEY = "no-key"
# Calls in a row that failed for good before a run stops: one dead call can be bad luck, three are not.
DEFAULT_BREAKER_LIMIT = 3


class CircuitBreaker:
    """Counts a run's model calls that failed for good in a row, across all its clients (thread-safe)."""

    def __init__(self, limit: int = DEFAULT_BREAKER_LIMIT) -> None:
        if limit < 1:
            raise LLMConfigError(f"the circuit breaker's limit must be at least 1 (got {limit})")
        self.limit = limit
        self.in_a_row = 0
        self._lock = threading.Lock()

    def succeeded(self) -> None:
        with self._lock:
            self.in_a_row = 0

    def failed(self, why: str) -> None:
        """Count one failed call; `ModelUnavailable` once `limit` have failed in a row."""
        with self._lock:
            self.in_a_row += 1
            tripped = self.in_a_row >= self.limit
        if tripped:
            raise ModelUnavailable(f"{self.limit} model calls in a row failed; the last: {why}", stage="model")


class RetryPolicy(BaseModel):
    """How long to wait between attempts."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_delay_sec: float = Field(1.0, ge=0, description="Backoff before the first retry; doubles per retry.")
    max_delay_sec: float = Field(30.0, ge=0, description="Cap of the exponential backoff.")
    # A server asking for minutes is better answered by failing this call than by stalling the run.
    max_retry_after_sec: float = Field(120.0, ge=0, description="Cap on a server's Retry-After.")

    def delay(self, retry: int, retry_after: float | None, rng: random.Random) -> float:
        """Seconds before retry number ``retry`` (1-based): Retry-After when given, else jittered backoff."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_retry_after_sec)
        ceiling = min(self.max_delay_sec, self.base_delay_sec * 2 ** (retry - 1))
        # "Equal jitter": at least half the backoff, so clients that failed together spread out but still wait.
        return rng.uniform(ceiling / 2, ceiling)


class _Failure(Enum):
    """What a failed attempt means for the call."""

    RETRY = "retry"
    CONFIG = "config"
    FINAL = "final"


def _litellm() -> ModuleType:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # never fetch a price table at import
    import litellm

    litellm.suppress_debug_info = True  # no "Give Feedback" banner on every retried error
    return litellm


def _api_error() -> type[Exception]:
    """The base class of every error litellm raises for a failed call (it maps all providers' onto OpenAI's)."""
    _litellm()
    import openai

    return openai.OpenAIError


def _classify(exc: BaseException) -> _Failure:
    import openai

    status = getattr(exc, "status_code", None)
    if any(text in str(exc) for text in _MISSING_KEY_TEXTS):
        return _Failure.CONFIG
    if isinstance(exc, openai.APIConnectionError):  # timeouts are connection errors in the SDK
        return _Failure.RETRY
    if isinstance(status, int) and (status in RETRY_STATUS or status >= 500):
        return _Failure.RETRY
    if status in CONFIG_STATUS or "LLM Provider NOT provided" in str(exc):
        return _Failure.CONFIG
    return _Failure.FINAL


def _retry_after(exc: BaseException) -> float | None:
    """Seconds a failed response's Retry-After header asks for (a number or an HTTP date), if any."""
    headers = getattr(exc, "litellm_response_headers", None) or getattr(getattr(exc, "response", None), "headers", None)
    value = headers.get("retry-after") if headers is not None else None
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        return parsedate_to_datetime(value).timestamp() - time.time()
    except (TypeError, ValueError):
        return None


def _error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:MAX_ERROR_TEXT]


def _server_text(exc: BaseException) -> str:
    """The server's own message, without litellm's layers of class names ("litellm.X: X: OpenAIException - ")."""
    text = " ".join(str(exc).split())
    while True:
        shorter = re.sub(r"^(litellm\.\w+: |\w+(Error|Exception)(: | - ))", "", text)
        if shorter == text:
            return text[:MAX_ERROR_TEXT]
        text = shorter


def connection_cause(exc: BaseException | None, timeout_sec: float | None = None) -> str | None:
    """'did not answer within N s' / 'cannot be reached …' when `exc` is a timeout or a failed connection
    (litellm reports a refused connection as a 500 "Connection error"), else None."""
    if exc is None:
        return None
    import openai

    if isinstance(exc, openai.APITimeoutError) or "timed out" in str(exc).lower():
        return f"did not answer within {timeout_sec:g} s" if timeout_sec else "did not answer in time"
    if isinstance(exc, openai.APIConnectionError) or "Connection error" in str(exc):
        return "cannot be reached (connection refused, or no route to the host)"
    return None


def describe_failure(exc: BaseException, timeout_sec: float | None = None) -> str:
    """What went wrong with a call, in the words a user acts on: unreachable, timed out, 429, HTTP n."""
    cause = connection_cause(exc, timeout_sec)
    if cause is not None:
        return cause
    status = getattr(exc, "status_code", None)
    if status == 429:
        return "rate-limited (429)"
    if isinstance(status, int):
        return f"HTTP {status}: {_server_text(exc)}"
    return _error_text(exc)


class LLMClient:
    """A model reached through litellm; `complete` returns one reply or raises one of `repo2rlenv.llm.errors`."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key_env: str | None = None,
        timeout_sec: float = 120,
        max_retries: int = 4,
        prices: Prices | None = None,
        ledger: Ledger,
        max_spend_usd: float | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        retry: RetryPolicy | None = None,
        breaker: CircuitBreaker | None = None,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        """``prices=None`` reads ``R2E_PRICE_<MODEL>`` from the environment; ``api_key_env=None`` leaves the
        key to litellm's provider defaults (``OPENAI_API_KEY`` …). ``breaker`` (shared by a run's clients)
        stops the run after that many calls in a row failed for good. ``sleep``/``rng`` exist for tests."""
        if timeout_sec <= 0 or max_retries < 0:
            raise LLMConfigError(f"timeout_sec must be > 0 and max_retries >= 0 (got {timeout_sec}, {max_retries})")
        self.model = model
        self.base_url = base_url
        self.timeout_sec = timeout_sec
        self.max_retries = max_retries
        self.prices = prices if prices is not None else Prices.load([model])
        self.ledger = ledger
        self.max_spend_usd = max_spend_usd
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.retry = retry or RetryPolicy()
        self.breaker = breaker
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._api_key: str | None = None
        self._needs_placeholder: bool | None = None  # decided at the first call (it needs litellm)
        if api_key_env is not None:
            self._api_key = os.environ.get(api_key_env)
            if not self._api_key:
                raise LLMConfigError(f"{api_key_env} is not set: it should hold the API key for {model}")
        if max_spend_usd is not None and self.prices.for_model(model) is None:
            # Without a price the ledger cannot add up spend, and a ceiling that cannot trip is worse than none.
            raise LLMConfigError(
                f"--max-spend-usd needs a price for {model}: set {env_var(model)}='<input>,<output>' "
                f"(USD per million tokens) or [prices.\"{model}\"] input_per_mtok/output_per_mtok in the config file"
            )

    def __repr__(self) -> str:
        return f"LLMClient(model={self.model!r}, base_url={self.base_url!r})"

    def complete(self, messages: list[Message], *, role: str,
                 on_token: Callable[[str], None] | None = None) -> Completion:
        """One reply to ``messages``; every attempt goes into the ledger under ``role``. With ``on_token``
        the reply is streamed and each piece of text is handed to it as it arrives (a retried attempt
        streams again from its start)."""
        key = request_key(self.model, messages)
        api_error = _api_error()
        attempt = 0
        while True:
            attempt += 1
            self._check_spend()
            start = time.monotonic()
            try:
                response = self._send(messages) if on_token is None else _streamed(self._send(messages, True), on_token)
            except api_error as exc:
                failure = _classify(exc)
                self.ledger.record(LedgerEntry(
                    role=role, model=self.model, attempt=attempt, ok=False, error=_error_text(exc),
                    status_code=getattr(exc, "status_code", None), latency_sec=time.monotonic() - start,
                    request_key=key))
                if failure is _Failure.CONFIG:
                    raise LLMConfigError(f"{self.model} cannot be used: {_error_text(exc)} "
                                         "(check the model id, the base URL and the API key)") from exc
                if failure is _Failure.FINAL or attempt > self.max_retries:
                    why = f"{self.model}: {describe_failure(exc, self.timeout_sec)} (after {attempt} attempt{'s' * (attempt > 1)})"
                    if self.breaker is not None:
                        self.breaker.failed(why)
                    raise LLMCallFailed(why) from exc
                self._sleep(self.retry.delay(attempt, _retry_after(exc), self._rng))
                continue
            if self.breaker is not None:
                self.breaker.succeeded()
            return self._finish(response, messages, role, attempt, time.monotonic() - start, key)

    def _check_spend(self) -> None:
        if self.max_spend_usd is None:
            return
        spent = self.ledger.spent_usd()
        if spent >= self.max_spend_usd:
            raise SpendLimitReached(f"spent ${spent:.4f} of the ${self.max_spend_usd:.4f} ceiling; no more model calls")

    def _send(self, messages: list[Message], stream: bool = False) -> Any:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "timeout": self.timeout_sec,
            "max_retries": 0,  # the OpenAI SDK would otherwise retry twice, unseen by the ledger
            "num_retries": 0,
            "drop_params": True,  # a provider without e.g. temperature gets the call without it
        }
        optional = {"api_base": self.base_url, "api_key": self._api_key, "temperature": self.temperature,
                    "max_tokens": self.max_tokens}
        kwargs.update({k: v for k, v in optional.items() if v is not None})
        litellm = _litellm()
        if self._api_key is None and self.base_url is not None and self._needs_placeholder is None:
            self._needs_placeholder = bool(litellm.validate_environment(model=self.model).get("missing_keys"))
        if self._api_key is None and self._needs_placeholder:
            kwargs["api_key"] = PLACEHOLDER_KEY
        if stream:  # the last chunk then carries the usage, as a non-streamed reply would
            kwargs.update(stream=True, stream_options={"include_usage": True})
        return litellm.completion(**kwargs)

    def _finish(self, response: Any, messages: list[Message], role: str, attempt: int, latency: float,
                key: str) -> Completion:
        choice = response.choices[0]
        text = choice.message.content or ""
        usage = _usage(getattr(response, "usage", None), messages, text)
        cost = self.prices.cost(self.model, usage.prompt_tokens, usage.completion_tokens)
        self.ledger.record(LedgerEntry(
            role=role, model=self.model, attempt=attempt, ok=True, prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens, tokens_estimated=usage.estimated, latency_sec=latency,
            cost_usd=cost, request_key=key))
        return Completion(text=text, usage=usage, model=self.model, cost_usd=cost, latency_sec=latency,
                          finish_reason=getattr(choice, "finish_reason", None), attempts=attempt, request_key=key)


def _streamed(chunks: Any, on_token: Callable[[str], None]) -> Any:
    """Read a streamed reply, handing each piece of text to `on_token`; returns the shape of a
    non-streamed response (`choices[0].message.content`, `finish_reason`, `usage`)."""
    from types import SimpleNamespace

    pieces: list[str] = []
    finish, usage = None, None
    for chunk in chunks:
        usage = getattr(chunk, "usage", None) or usage
        for choice in getattr(chunk, "choices", None) or []:
            delta = getattr(getattr(choice, "delta", None), "content", None)
            if delta:
                pieces.append(delta)
                on_token(delta)
            finish = getattr(choice, "finish_reason", None) or finish
    message = SimpleNamespace(content="".join(pieces))
    return SimpleNamespace(choices=[SimpleNamespace(message=message, finish_reason=finish)], usage=usage)


def _usage(reported: Any, messages: list[Message], text: str) -> Usage:
    """The API's usage; an estimate when it sent none.

    litellm fills a missing usage object with zeros, and no real prompt has zero tokens, so zero prompt
    tokens means "not reported".
    """
    prompt = getattr(reported, "prompt_tokens", None)
    completion = getattr(reported, "completion_tokens", None)
    if isinstance(prompt, int) and prompt > 0 and isinstance(completion, int):
        return Usage(prompt_tokens=prompt, completion_tokens=completion)
    return Usage(prompt_tokens=estimate_prompt_tokens(messages), completion_tokens=estimate_text_tokens(text),
                 estimated=True)

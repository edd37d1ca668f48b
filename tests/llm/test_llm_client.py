"""LLMClient through litellm over real HTTP to the scripted server: replies, retries, timeouts, spend, usage."""

from __future__ import annotations

import pytest

from repo2rlenv.llm import Ledger, LLMCallFailed, LLMConfigError, ModelPrice, Prices, SpendLimitReached
from repo2rlenv.llm.base import estimate_prompt_tokens, estimate_text_tokens, request_key

MESSAGES = [{"role": "system", "content": "You write tests."}, {"role": "user", "content": "Test add()."}]
# $1 per 1000 prompt tokens and $2 per 1000 completion tokens: costs come out as round numbers.
PRICES = Prices(models={"openai/scripted": ModelPrice(input_per_mtok=1000.0, output_per_mtok=2000.0)})


def test_first_try_reply_with_reported_usage(scripted_server, scripted, make_llm_client):
    scripted_server.push(scripted.reply("```python\nx = 1\n```", prompt_tokens=321, completion_tokens=12))
    client = make_llm_client(scripted_server, prices=PRICES)

    reply = client.complete(MESSAGES, role="oracle")

    assert reply.text == "```python\nx = 1\n```"
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens, reply.usage.estimated) == (321, 12, False)
    assert reply.cost_usd == pytest.approx(0.321 + 0.024)
    assert reply.attempts == 1 and reply.finish_reason == "stop"
    assert reply.request_key == request_key("openai/scripted", MESSAGES)
    [request] = scripted_server.requests
    assert request.body["model"] == "scripted" and request.messages == MESSAGES
    assert request.headers["authorization"] == "Bearer sk-scripted-test"
    [entry] = client.ledger.entries
    assert (entry.role, entry.model, entry.attempt, entry.ok) == ("oracle", "openai/scripted", 1, True)
    assert (entry.prompt_tokens, entry.completion_tokens, entry.tokens_estimated) == (321, 12, False)
    assert entry.cost_usd == pytest.approx(0.345) and entry.request_key == reply.request_key


def test_429_with_retry_after_then_success(scripted_server, scripted, make_llm_client):
    scripted_server.push(scripted.error(429, retry_after="7"), scripted.reply("ok"))
    client = make_llm_client(scripted_server)

    reply = client.complete(MESSAGES, role="oracle")

    assert reply.text == "ok" and reply.attempts == 2
    assert len(scripted_server.requests) == 2
    assert make_llm_client.sleeps == [7.0]  # the server's Retry-After, not the backoff
    first, second = client.ledger.entries
    assert (first.ok, first.status_code, first.attempt, first.prompt_tokens) == (False, 429, 1, None)
    assert "RateLimitError" in (first.error or "")
    assert (second.ok, second.attempt) == (True, 2)


def test_5xx_retried_with_jittered_exponential_backoff(scripted_server, scripted, make_llm_client):
    scripted_server.push(scripted.error(500), scripted.error(503), scripted.reply("third time"))
    client = make_llm_client(scripted_server)

    assert client.complete(MESSAGES, role="oracle").text == "third time"

    first, second = make_llm_client.sleeps
    assert 0.005 <= first <= 0.01 and 0.01 <= second <= 0.02  # base 0.01, doubling, equal jitter
    assert [e.status_code for e in client.ledger.entries] == [500, 503, None]


def test_retries_exhausted_raise_call_failed(scripted_server, scripted, make_llm_client):
    scripted_server.push(*[scripted.error(502)] * 3)
    client = make_llm_client(scripted_server, max_retries=2)

    with pytest.raises(LLMCallFailed, match=r"HTTP 502: scripted 502 \(after 3 attempts\)"):
        client.complete(MESSAGES, role="oracle")
    assert len(scripted_server.requests) == 3
    assert client.ledger.totals().failed == 3


def test_timeout_is_retried_then_fails(scripted_server, scripted, make_llm_client):
    scripted_server.push(scripted.stall(30), scripted.stall(30))
    client = make_llm_client(scripted_server, timeout_sec=0.5, max_retries=1)

    with pytest.raises(LLMCallFailed, match=r"did not answer within 0.5 s \(after 2 attempts\)"):
        client.complete(MESSAGES, role="oracle")
    assert len(scripted_server.requests) == 2
    assert [(e.ok, e.status_code) for e in client.ledger.entries] == [(False, 408), (False, 408)]


def test_bad_request_is_not_retried(scripted_server, make_llm_client):
    client = make_llm_client(scripted_server)  # empty script: the server answers 400

    with pytest.raises(LLMCallFailed, match="HTTP 400: script exhausted"):
        client.complete(MESSAGES, role="oracle")
    assert len(scripted_server.requests) == 1 and make_llm_client.sleeps == []


def test_refused_key_is_a_config_error(scripted_server, scripted, make_llm_client):
    scripted_server.push(scripted.error(401))
    client = make_llm_client(scripted_server)

    with pytest.raises(LLMConfigError, match="AuthenticationError"):
        client.complete(MESSAGES, role="oracle")
    assert len(scripted_server.requests) == 1


def test_model_without_provider_is_a_config_error(scripted_server, make_llm_client):
    client = make_llm_client(scripted_server, model="scripted")  # litellm needs provider/model

    with pytest.raises(LLMConfigError, match="cannot be used.*LLM Provider NOT provided"):
        client.complete(MESSAGES, role="oracle")
    assert scripted_server.requests == []


def test_spend_ceiling_stops_before_sending(scripted_server, scripted, make_llm_client):
    scripted_server.push(*[scripted.reply("r", prompt_tokens=1000, completion_tokens=0)] * 3)
    client = make_llm_client(scripted_server, prices=PRICES, max_spend_usd=2.0)

    client.complete(MESSAGES, role="oracle")
    client.complete(MESSAGES, role="oracle")  # $2 spent: the ceiling is reached
    with pytest.raises(SpendLimitReached, match=r"\$2\.0000 of the \$2\.0000"):
        client.complete(MESSAGES, role="oracle")

    assert len(scripted_server.requests) == 2  # the third call was never sent
    assert client.ledger.spent_usd() == pytest.approx(2.0)


def test_missing_usage_is_estimated_and_flagged(scripted_server, scripted, make_llm_client):
    scripted_server.push(scripted.reply("a reply of some length", usage=False))
    client = make_llm_client(scripted_server, prices=PRICES)

    reply = client.complete(MESSAGES, role="oracle")

    assert reply.usage.estimated
    assert reply.usage.prompt_tokens == estimate_prompt_tokens(MESSAGES) > 0
    assert reply.usage.completion_tokens == estimate_text_tokens("a reply of some length")
    [entry] = client.ledger.entries
    assert entry.tokens_estimated and entry.prompt_tokens == reply.usage.prompt_tokens
    assert entry.cost_usd == pytest.approx(PRICES.cost("openai/scripted", entry.prompt_tokens, entry.completion_tokens))
    assert client.ledger.totals().estimated == 1


def test_ledger_totals_file_and_roles(scripted_server, scripted, make_llm_client):
    scripted_server.push(scripted.reply("a", prompt_tokens=100, completion_tokens=10), scripted.error(429),
                         scripted.reply("b", prompt_tokens=200, completion_tokens=20),
                         scripted.reply("c", prompt_tokens=50, completion_tokens=5))
    client = make_llm_client(scripted_server, prices=PRICES)

    client.complete(MESSAGES, role="oracle")
    client.complete(MESSAGES, role="oracle")
    client.complete([{"role": "user", "content": "solve"}], role="solver")

    totals = client.ledger.totals()
    assert (totals.attempts, totals.ok, totals.failed) == (4, 3, 1)
    assert (totals.prompt_tokens, totals.completion_tokens) == (350, 35)
    assert totals.cost_usd == pytest.approx(0.35 + 0.07) and totals.unpriced == 0
    assert client.ledger.totals(role="solver").prompt_tokens == 50
    assert Ledger.read(client.ledger.path) == client.ledger.entries  # one JSONL line per attempt


def test_unpriced_model_has_no_cost(scripted_server, scripted, make_llm_client):
    scripted_server.push(scripted.reply("a"))
    client = make_llm_client(scripted_server)  # Prices(): nothing known

    assert client.complete(MESSAGES, role="oracle").cost_usd is None
    totals = client.ledger.totals()
    assert (totals.unpriced, totals.cost_usd) == (1, 0.0)


def test_configuration_errors_before_any_call(scripted_server, make_llm_client, monkeypatch):
    with pytest.raises(LLMConfigError, match="R2E_PRICE_OPENAI_SCRIPTED"):
        make_llm_client(scripted_server, max_spend_usd=1.0)  # a ceiling without a price could never trip
    monkeypatch.delenv("R2E_TEST_LLM_KEY")
    with pytest.raises(LLMConfigError, match="R2E_TEST_LLM_KEY is not set"):
        make_llm_client(scripted_server)
    assert scripted_server.requests == []


def test_the_circuit_breaker_stops_after_calls_in_a_row_fail_and_a_success_resets_it(scripted_server, scripted,
                                                                                     make_llm_client):
    from repo2rlenv.llm import CircuitBreaker, ModelUnavailable

    breaker = CircuitBreaker(limit=2)
    first, second = make_llm_client(scripted_server, max_retries=0, breaker=breaker), \
        make_llm_client(scripted_server, max_retries=0, breaker=breaker)
    scripted_server.push(scripted.error(500), scripted.reply("fine"), scripted.error(500), scripted.error(503))
    with pytest.raises(LLMCallFailed):
        first.complete(MESSAGES, role="oracle")
    assert second.complete(MESSAGES, role="oracle").text == "fine"  # the count starts again
    with pytest.raises(LLMCallFailed):
        second.complete(MESSAGES, role="oracle")
    with pytest.raises(ModelUnavailable, match=r"2 model calls in a row failed; the last: openai/scripted: HTTP 503"):
        first.complete(MESSAGES, role="oracle")  # the breaker is shared: two clients, one run


def test_a_missing_key_is_a_config_error_not_a_retried_500(scripted_server, make_llm_client, monkeypatch):
    from repo2rlenv.llm import Ledger, LLMClient, Prices

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    client = LLMClient("openai/gpt-4o-mini", ledger=Ledger(), prices=Prices(), max_retries=3,
                       sleep=make_llm_client.sleeps.append)
    with pytest.raises(LLMConfigError, match="check the model id, the base URL and the API key"):
        client.complete(MESSAGES, role="oracle")
    assert make_llm_client.sleeps == [] and len(client.ledger.entries) == 1


def test_a_streamed_reply_hands_each_piece_over_as_it_arrives_and_keeps_the_usage(scripted_server, scripted,
                                                                                  make_llm_client):
    scripted_server.push(scripted.reply("def test_one():\n    assert 1\n", prompt_tokens=40, completion_tokens=9))
    pieces: list[str] = []
    reply = make_llm_client(scripted_server, prices=PRICES).complete(MESSAGES, role="solver", on_token=pieces.append)

    assert scripted_server.streamed == 1 and scripted_server.requests[0].body["stream"] is True
    assert len(pieces) > 1 and "".join(pieces) == reply.text == "def test_one():\n    assert 1\n"
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens, reply.usage.estimated) == (40, 9, False)
    assert reply.finish_reason == "stop" and reply.cost_usd == pytest.approx(0.04 + 0.018)

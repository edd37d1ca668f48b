"""The model check every command makes before a container starts, over real HTTP to the scripted server:
an unknown provider, a missing key, a refused connection, a hung endpoint, a wrong key, a garbage reply
and a rate limit each end in one line (or, for the rate limit, a warning), and a healthy endpoint costs
one recorded one-token call."""

from __future__ import annotations

import socket

import pytest

from repo2rlenv.llm import LLMConfigError
from repo2rlenv.llm.preflight import PREFLIGHT_ROLE, ModelSetting, preflight

KEY_ENV = "R2E_TEST_LLM_KEY"


@pytest.fixture
def checking(scripted):
    """A scripted server that puts the model check through its script (`answer_preflight=False`)."""
    with scripted.ScriptedServer(answer_preflight=False) as server:
        yield server


def _setting(server, model: str = "openai/scripted", key_env: str | None = KEY_ENV) -> ModelSetting:
    return ModelSetting(model, server.base_url, key_env)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_healthy_endpoint_costs_one_recorded_one_token_call(scripted_server, checking, scripted):
    checking.push(scripted.reply("OK", prompt_tokens=9, completion_tokens=1))
    [entry] = preflight([_setting(checking), _setting(checking)])  # the same setting twice is checked once
    [request] = checking.requests
    assert request.body["max_tokens"] == 1 and "preflight" in request.text()
    assert (entry.role, entry.ok, entry.prompt_tokens, entry.completion_tokens) == (PREFLIGHT_ROLE, True, 9, 1)


def test_a_model_id_without_a_provider_is_refused_before_any_call(scripted_server, checking):
    with pytest.raises(LLMConfigError, match=r"--llm scripted: litellm cannot tell which provider .* openai/scripted"):
        preflight([_setting(checking, model="scripted")])
    assert checking.requests == []


def test_a_missing_key_is_named_before_any_call(scripted_server, checking, monkeypatch):
    monkeypatch.delenv("R2E_NO_SUCH_KEY", raising=False)
    with pytest.raises(LLMConfigError, match="R2E_NO_SUCH_KEY is not set"):
        preflight([_setting(checking, key_env="R2E_NO_SUCH_KEY")])
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(LLMConfigError, match=r"openai/gpt-4o-mini needs \$OPENAI_API_KEY .*--api-key-env"):
        preflight([ModelSetting("openai/gpt-4o-mini")])
    assert checking.requests == []


def test_an_endpoint_that_is_down_is_named_with_its_url(scripted_server):
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    with pytest.raises(LLMConfigError, match=rf"openai/scripted at {url} cannot be reached .*--llm-base-url"):
        preflight([ModelSetting("openai/scripted", url, KEY_ENV)])


def test_a_hung_endpoint_is_named_within_the_check_timeout(scripted_server, checking, scripted):
    checking.push(scripted.stall(20))
    with pytest.raises(LLMConfigError, match=r"did not answer within 1 s"):
        preflight([_setting(checking)], timeout_sec=1.0)


def test_a_wrong_key_and_a_garbage_reply_are_refused(scripted_server, checking, scripted):
    checking.push(scripted.error(401))
    with pytest.raises(LLMConfigError, match=r"model check: .*check the model id, the base URL and the API key"):
        preflight([_setting(checking)])
    checking.push(scripted.garbage())
    with pytest.raises(LLMConfigError, match=r"model check: openai/scripted at .* failed one tiny call"):
        preflight([_setting(checking)])


def test_a_rate_limit_is_an_answer_with_a_warning(scripted_server, checking, scripted):
    checking.push(scripted.error(429))
    warnings: list[str] = []
    [entry] = preflight([_setting(checking)], warn=warnings.append)
    assert entry.status_code == 429 and "rate-limiting (429)" in warnings[0]


def test_a_base_url_without_a_key_sends_a_placeholder_instead_of_failing_as_a_500(scripted_server, checking,
                                                                                  scripted, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    checking.push(scripted.reply("OK"))
    preflight([_setting(checking, key_env=None)])
    assert checking.requests[0].headers["authorization"] == "Bearer no-key"

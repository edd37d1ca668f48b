"""Fixtures for model-call tests: the scripted OpenAI-compatible server (real HTTP on 127.0.0.1) and its steps.

`scripted_server.py` is loaded by path so that other test directories can load the same module
(`load_scripted_server`) without packages; one module object is shared through `sys.modules`.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

SERVER_PATH = Path(__file__).with_name("scripted_server.py")
MODULE_NAME = "r2e_scripted_server"
KEY_ENV = "R2E_TEST_LLM_KEY"
KEY = "sk-scripted-test"


def load_scripted_server() -> ModuleType:
    """The scripted server module (loaded once per session)."""
    if MODULE_NAME not in sys.modules:
        spec = importlib.util.spec_from_file_location(MODULE_NAME, SERVER_PATH)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[MODULE_NAME] = module  # dataclasses look their module up while the class is built
        spec.loader.exec_module(module)
    return sys.modules[MODULE_NAME]


@pytest.fixture
def scripted() -> ModuleType:
    """The module: `scripted.reply(...)`, `scripted.error(429, retry_after="2")`, `scripted.stall(5)`."""
    return load_scripted_server()


@pytest.fixture
def scripted_server(monkeypatch: pytest.MonkeyPatch) -> Iterator:
    """A running server with an empty script; the dummy API key is in ``$R2E_TEST_LLM_KEY``."""
    monkeypatch.setenv(KEY_ENV, KEY)
    for name in ("NO_PROXY", "no_proxy"):  # a proxy from the environment must not catch loopback calls
        monkeypatch.setenv(name, "127.0.0.1,localhost")
    with load_scripted_server().ScriptedServer() as server:
        yield server


class ClientFactory:
    """Builds `LLMClient`s pointed at a scripted server; waits between retries are recorded, not slept."""

    def __init__(self, ledger_dir: Path) -> None:
        self.ledger_dir = ledger_dir
        self.sleeps: list[float] = []
        self.made = 0

    def __call__(self, server, **overrides):
        from repo2rlenv.llm import Ledger, LLMClient, Prices, RetryPolicy

        self.made += 1
        options = {
            "base_url": server.base_url,
            "api_key_env": KEY_ENV,
            "ledger": Ledger(self.ledger_dir / f"ledger{self.made}.jsonl"),
            "prices": Prices(),
            "timeout_sec": 20.0,
            "max_retries": 2,
            "retry": RetryPolicy(base_delay_sec=0.01, max_delay_sec=0.04),
            "sleep": self.sleeps.append,
        }
        model = overrides.pop("model", "openai/scripted")
        options.update(overrides)
        return LLMClient(model, **options)


@pytest.fixture
def make_llm_client(tmp_path: Path) -> ClientFactory:
    """`make_llm_client(server, model=..., **LLMClient options)`; ledgers go to tmp_path, sleeps to `.sleeps`."""
    return ClientFactory(tmp_path)

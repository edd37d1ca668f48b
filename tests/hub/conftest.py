"""Fixtures for the hub tests: hand-built datasets (hub_kit.py) and a fake Hub on 127.0.0.1 (hub_server.py)."""

from __future__ import annotations

import importlib.util
import sys
import threading
from pathlib import Path
from types import ModuleType
from typing import Callable, Iterator

import pytest


def _load(name: str, filename: str) -> ModuleType:
    # importlib mode: a conftest cannot import its siblings by name, so they are loaded from their paths.
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(filename))
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses need their module registered while it executes
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture(scope="session")
def hub_kit() -> ModuleType:
    """The dataset builder module: `FakeTask`, `build_dataset`, `DEFAULT_TASKS`, `TOKEN`."""
    return _load("r2e_hub_kit", "hub_kit.py")


@pytest.fixture
def make_dataset(tmp_path: Path, hub_kit: ModuleType) -> Callable[..., Path]:
    """`make_dataset(specs=None, name="ds")`: a dataset dir with the given (default: three) tasks."""

    def make(specs: list | None = None, name: str = "ds") -> Path:
        return hub_kit.build_dataset(tmp_path / name, list(specs or hub_kit.DEFAULT_TASKS))

    return make


@pytest.fixture
def fake_hub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, hub_kit: ModuleType) -> Iterator[object]:
    """A fake Hub serving on 127.0.0.1, with the environment pointing huggingface_hub at it.

    HF_HUB_DISABLE_XET=1 makes huggingface_hub send large files through the LFS batch protocol; it is
    read at import, so the already-imported constant is patched too. HF_TOKEN_PATH points at a missing
    file so a token stored on this machine can never be used.
    """
    import huggingface_hub.constants as hf_constants

    hub = _load("r2e_fake_hub_server", "hub_server.py").FakeHub(hub_kit.TOKEN)
    thread = threading.Thread(target=hub.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    monkeypatch.setenv("HF_TOKEN", hub_kit.TOKEN)
    monkeypatch.setenv("HF_HUB_DISABLE_XET", "1")
    monkeypatch.setattr(hf_constants, "HF_HUB_DISABLE_XET", True)
    monkeypatch.setattr(hf_constants, "HF_TOKEN_PATH", str(tmp_path / "no-stored-token"))
    monkeypatch.setattr(hf_constants, "HF_STORED_TOKENS_PATH", str(tmp_path / "no-stored-tokens"))
    try:
        yield hub
    finally:
        hub.shutdown()
        hub.server_close()

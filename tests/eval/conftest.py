"""Fixtures of the eval tests: the scripted model server (tests/llm) and the solver's test kit
(tests/solver/solver_kit.py), both loaded by path."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

TESTS = Path(__file__).resolve().parents[1]


def _load(name: str, path: Path) -> ModuleType:
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


_llm = _load("r2e_llm_fixtures", TESTS / "llm" / "conftest.py")
kit = _load("r2e_solver_kit", TESTS / "solver" / "solver_kit.py")

scripted = _llm.scripted
scripted_server = _llm.scripted_server


@pytest.fixture(scope="session")
def solver_kit() -> ModuleType:
    return kit


@pytest.fixture(scope="session")
def scripted_module() -> ModuleType:
    """The scripted server module, for fixtures wider than one test (`scripted` is per test)."""
    return _llm.load_scripted_server()

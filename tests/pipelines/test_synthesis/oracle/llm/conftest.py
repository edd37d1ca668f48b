"""Fixtures for the LLM oracle, reused rather than rewritten: the scripted OpenAI-compatible server and its
client factory (tests/llm/conftest.py), and tiny A/B repo pairs with a runner that runs the probe in real
subprocesses (tests/pipelines/test_synthesis/oracle/differential/conftest.py). Both are loaded by path; their
fixtures are re-exported here under the same names.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

TESTS = Path(__file__).resolve().parents[4]


def _load(name: str, path: Path) -> ModuleType:
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


_llm = _load("r2e_llm_fixtures", TESTS / "llm" / "conftest.py")
_oracle = _load("r2e_oracle_fixtures", TESTS / "pipelines" / "test_synthesis" / "oracle" / "differential" / "conftest.py")

scripted = _llm.scripted
scripted_server = _llm.scripted_server
make_llm_client = _llm.make_llm_client
make_pair = _oracle.make_pair
runner_for = _oracle.runner_for
run_test_file = _oracle.run_test_file

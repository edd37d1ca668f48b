"""The solver's public surface: one import, lazy, with defaults enough to solve one function in a few lines
(the end-to-end solve through it is `test_solver_sessions.py`, which runs the example built on it)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from repo2rlenv.llm import Ledger
from repo2rlenv.solver.config import CallRole


def test_importing_the_package_loads_no_model_client_or_loop():
    code = ("import sys, repo2rlenv.solver as s; "
            "print(sorted(m for m in ('litellm', 'docker', 'repo2rlenv.solver.loop') if m in sys.modules)); "
            "from repo2rlenv.solver import Solver; print(Solver.__module__, 'litellm' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["[]", "repo2rlenv.solver.loop False"]


def test_an_unknown_name_is_an_attribute_error():
    import repo2rlenv.solver as solver

    with pytest.raises(AttributeError):
        solver.NoSuchThing  # noqa: B018


def test_for_model_fills_in_the_config_ledger_and_clients():
    from repo2rlenv.solver import Solver, SolverConfig

    solver = Solver.for_model("openai/scripted", base_url="http://127.0.0.1:9/v1", max_rounds=2)
    assert solver.config == SolverConfig(model="openai/scripted", base_url="http://127.0.0.1:9/v1", max_rounds=2)
    assert isinstance(solver.ledger, Ledger) and solver.ledger.entries == []
    assert set(solver.clients) == set(CallRole)


def test_for_model_refuses_a_misspelt_setting():
    from pydantic import ValidationError

    from repo2rlenv.solver import Solver

    with pytest.raises(ValidationError):
        Solver.for_model("openai/scripted", max_round=2)

"""Solver settings: defaults < config file < flags, routing per role, one clear line when invalid."""

from __future__ import annotations

import pytest

from repo2rlenv.solver.config import CallRole, load_solver_config
from repo2rlenv.solver.errors import SolverInputError


def test_file_then_flags_with_routing_per_role(tmp_path):
    path = tmp_path / "solver.toml"
    path.write_text('model = "openai/small"\nmax_rounds = 6\n[routing]\nplan = "openai/big"\n'
                    '[prices."openai/big"]\ninput_per_mtok = 2.5\noutput_per_mtok = 10\n')
    config = load_solver_config(path, {"max_rounds": 3, "token_budget": None, "routing": {"repair": "openai/tiny"}})
    assert (config.model, config.max_rounds, config.token_budget) == ("openai/small", 3, 200_000)
    assert [config.model_for(r) for r in CallRole] == ["openai/big", "openai/small", "openai/tiny"]
    assert config.models() == ["openai/small", "openai/big", "openai/tiny"]
    assert config.prices["openai/big"].output_per_mtok == 10


@pytest.mark.parametrize(("flags", "message"), [
    ({}, "no model given: pass --llm"),
    ({"model": "m", "max_rounds": 0}, "solver setting 'max_rounds': 0 is not allowed"),
    ({"model": "m", "colour": "red"}, "unknown solver setting 'colour'"),
])
def test_invalid_settings_are_one_line(flags, message):
    with pytest.raises(SolverInputError) as info:
        load_solver_config(None, flags)
    assert message in str(info.value) and "\n" not in str(info.value)

"""The documented model settings (examples/models/*.toml) work for all three commands: generate's config
and the solver's both read each file, and each model it names passes the model check against a local
OpenAI-compatible server standing in for the real endpoint (only the URL is swapped)."""

from __future__ import annotations

from pathlib import Path

import pytest

from repo2rlenv.config import build_config, load_config_file
from repo2rlenv.llm.preflight import ModelSetting, preflight
from repo2rlenv.solver.config import load_solver_config

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples" / "models").glob("*.toml"))


def test_there_are_the_two_documented_examples():
    assert [p.name for p in EXAMPLES] == ["nebius.toml", "vllm.toml"]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_one_file_serves_generate_solve_and_eval_and_its_models_answer(path, scripted_server, monkeypatch):
    values = load_config_file(path)
    generate = build_config(values, {"repo": "examples/minicart", "llm_base_url": scripted_server.base_url})
    solver = load_solver_config(path, {"base_url": scripted_server.base_url, "routing": {}})
    assert (generate.llm, generate.api_key_env) == (solver.model, solver.api_key_env) == (values["llm"],
                                                                                        values.get("api_key_env"))
    assert generate.prices == {} and solver.prices == {}  # prices are the user's to give, never shipped
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # the vLLM example relies on no key being around
    if solver.api_key_env:
        monkeypatch.setenv(solver.api_key_env, "sk-example")
    entries = preflight([ModelSetting(m, solver.base_url, solver.api_key_env) for m in solver.models()])
    assert [e.model for e in entries] == solver.models() and all(e.ok for e in entries)
    sent = {r.body["model"] for r in scripted_server.preflights}
    assert sent == {m.removeprefix("openai/") for m in solver.models()}
    expected_key = "Bearer sk-example" if solver.api_key_env else "Bearer no-key"
    assert {r.headers["authorization"] for r in scripted_server.preflights} == {expected_key}

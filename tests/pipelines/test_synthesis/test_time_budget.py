"""`time_budget_min`: past the budget no new candidate starts; the summary and the console say so, and a
rerun without it continues from the journal."""

from __future__ import annotations

import json

import pytest

from repo2rlenv.config import GenerateConfig
from repo2rlenv.generate import run_generate
from repo2rlenv.progress import Reporter


@pytest.mark.slow
def test_a_spent_budget_stops_new_candidates_and_a_rerun_continues(example_repo, tmp_path, r2e_cache):
    out = tmp_path / "ds"

    def generate(**opts):
        config = GenerateConfig(repo=str(example_repo), out=out, sandbox="local", cache_dir=r2e_cache,
                                pipeline_opts={"strategy": "mutation", "limit": 1, "seed": 3, **opts})
        return run_generate(config, Reporter(quiet=True))

    # A budget of 0.6 s is spent by the environment and the baseline: nothing is gated.
    first = generate(time_budget_min=0.01)
    assert first.emitted == []
    summary = json.loads((out / "summary.json").read_text())
    assert "time budget of 0.01 min spent" in summary["stopped"]
    assert summary["stages"].get("gated", 0) == 0
    second = generate()
    assert len(second.emitted) == 1
    assert "stopped" not in json.loads((out / "summary.json").read_text())

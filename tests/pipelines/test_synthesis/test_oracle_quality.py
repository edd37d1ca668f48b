"""An emitted differential oracle's quality is recorded on its candidate (distinct behaviours asserted and
where its inputs came from), and `min_oracle_behaviours` keeps oracles under a floor out of the dataset."""

from __future__ import annotations

import pytest

from repo2rlenv.config import GenerateConfig
from repo2rlenv.generate import run_generate
from repo2rlenv.pipelines.test_synthesis.candidates import Candidate
from repo2rlenv.pipelines.test_synthesis.survivor_driver import LOW_QUALITY
from repo2rlenv.progress import Reporter


def _candidates(out) -> list[Candidate]:
    return [Candidate.model_validate_json(line) for line in (out / "candidates.jsonl").read_text().splitlines()]


def test_each_emitted_differential_oracle_records_its_quality(scored_dataset):
    emitted = [c for c in _candidates(scored_dataset) if c.status == "emitted"]
    assert len(emitted) == 2
    for cand in emitted:
        (quality,) = [g for g in cand.gates if g.gate == "oracle quality"]
        count = int(quality.detail.split(" ", 1)[0])
        assert count >= 1 and "inputs " in quality.detail


@pytest.mark.slow
def test_oracles_under_the_floor_are_not_emitted(example_repo, tmp_path, r2e_cache):
    out = tmp_path / "ds"
    config = GenerateConfig(repo=str(example_repo), out=out, sandbox="local", cache_dir=r2e_cache,
                            pipeline_opts={"strategy": "mutation", "limit": 1, "seed": 3, "operators": ["off_by_one"],
                                           "min_oracle_behaviours": 10,
                                           # the shortest functions only: 12 candidates, not 132 (~10 s, not ~2 min)
                                           "max_loc": 3})
    result = run_generate(config, Reporter(quiet=True))
    assert result.emitted == []
    low = [c for c in _candidates(out) if c.skip_reason == LOW_QUALITY]
    assert low, [c.skip_reason for c in _candidates(out)]
    assert all("min_oracle_behaviours=10" in c.gates[-1].detail for c in low)

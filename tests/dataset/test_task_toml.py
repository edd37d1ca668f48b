"""The task.toml model's versions: what older files read as (dataset/task_toml.py)."""

from __future__ import annotations

import pytest

from repo2rlenv.dataset.task_toml import SPEC_VERSION, TestSynthesisMeta, origin_of_kind

BASE = {"strategy": "commit_pair", "touched_function": "p.py::f", "baseline_coverage": 1.0,
        "baseline_full_coverage": True, "reward_mode": "gated", "coverage_weight": 0.5, "min_new_tests": 1,
        "max_test_loc": 200, "test_path": "tests/test_r2e_x.py"}


@pytest.mark.parametrize("kind,origin", [
    ("differential", "differential"), ("llm", "model"), ("hybrid", "differential"), ("human", "human"),
])
def test_files_before_spec_4_read_the_origin_their_oracle_kind_implies(kind, origin):
    assert SPEC_VERSION == 4
    assert origin_of_kind(kind) == origin
    assert TestSynthesisMeta.model_validate({**BASE, "oracle_kind": kind}).oracle_origin == origin


def test_a_written_origin_is_kept_and_checked():
    meta = TestSynthesisMeta.model_validate({**BASE, "oracle_kind": "human", "oracle_origin": "human"})
    assert meta.model_dump()["oracle_origin"] == "human"
    with pytest.raises(ValueError, match="oracle_origin"):
        TestSynthesisMeta.model_validate({**BASE, "oracle_kind": "llm", "oracle_origin": "robot"})

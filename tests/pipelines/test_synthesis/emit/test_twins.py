"""Which twin kinds a task grades with (twins.checked_kinds) and the twins it samples (VariantTexts).

The runs themselves are the sandbox's (crossed for real by the generate tests); here `a_passes` and
`b_fails` are plain functions of the twinned texts."""

from __future__ import annotations

import ast

from repo2rlenv.pipelines.test_synthesis.emit import twins
from repo2rlenv.dataset.task_toml import TestSynthesisMeta

A = '"""Shop."""\n\n\ndef price(amount, pct):\n    """Discounted."""\n    if pct > 100:\n        raise ValueError(pct)\n    total = amount * (1 - pct / 100)\n    return round(total, 2)\n'
B = A.replace("pct > 100", "pct >= 100")


def texts() -> twins.VariantTexts:
    return twins.VariantTexts({"shop.py": A}, [{"shop.py": B}])


def test_twins_of_each_side_keep_its_code_and_differ_from_it():
    made = texts()
    for side, original in ((0, A), (1, B)):
        twin = made.twin(side, 7, twins.ALL)["shop.py"]
        assert twin != original
        namespace: dict = {}
        exec(compile(twin, "shop.py", "exec"), namespace)
        assert namespace["price"](10, 50) == 5.0
    assert made.twin(0, 7, twins.ALL) == made.twin(0, 7, twins.ALL)  # fixed seeds: the same twins


def test_the_broadest_rung_that_keeps_the_suite_passing_wins():
    made = texts()
    assert twins.checked_kinds(made, a_passes=lambda files: True, b_fails=lambda files: True) == twins.ALL

    # Code that reads its own layout (here: its comment lines) breaks under padding only.
    def same_comments(files):
        return files["shop.py"].count("#") == A.count("#")

    chosen = twins.checked_kinds(made, a_passes=same_comments, b_fails=lambda files: True)
    assert chosen == ("neutral", "jitter", "references", "wrap", "opaque")  # the first rung without padding


def test_no_rung_works_when_nothing_passes():
    assert twins.checked_kinds(texts(), a_passes=lambda files: False, b_fails=lambda files: True) is None
    assert twins.checked_kinds(texts(), a_passes=lambda files: True, b_fails=lambda files: False) is None


def test_a_file_that_does_not_parse_is_used_as_it_is():
    made = twins.VariantTexts({"shop.py": A, "data.py": "def f(:\n"}, [{"shop.py": B, "data.py": "def f(:\n"}])
    assert set(made.plans) == {"shop.py"}
    assert made.twin(0, 1, twins.ALL)["data.py"] == "def f(:\n"
    ast.parse(made.twin(0, 1, twins.ALL)["shop.py"])


def test_task_toml_of_spec_1_still_loads():
    meta = TestSynthesisMeta.model_validate({
        "strategy": "mutation", "touched_function": "a.py::f", "baseline_coverage": 1.0,
        "baseline_full_coverage": True, "reward_mode": "gated", "coverage_weight": 0.5, "min_new_tests": 1,
        "max_test_loc": 200, "oracle_kind": "differential", "test_path": "tests/test_r2e_x.py", "aprime_level": 2})
    assert meta.twin_kinds == []

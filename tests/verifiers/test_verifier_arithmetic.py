"""The reward arithmetic and the config reader, without any test runs (synthetic run results)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from repo2rlenv.verifiers.test_synthesis import verifier as v
from repo2rlenv.verifiers.test_synthesis.config_model import VariantDiffs, VerifierConfig
from repo2rlenv.verifiers.test_synthesis.verifier_results import Outcome, RunResult, Status

P, F, E, S = Outcome.passed, Outcome.failed, Outcome.error, Outcome.skipped


def config(**overrides) -> v.Config:
    base = v.Config(schema_version=1, submission="tests/test_x.py", target_file="m.py", target_qualname="f",
                    function_lines=(1, 2, 3, 4), coverage_targets=(3, 4), baseline_full_coverage=False,
                    import_roots=("",), reward_mode="gated", coverage_weight=0.5, min_new_tests=1, max_test_loc=100,
                    run_timeout_sec=10, memory_mb=512, variants=v.Variants("b.diff", "a.diff"), manifest="m.json")
    return dataclasses.replace(base, **overrides)


def run(name: str, cases: dict[str, Outcome] | None = None, status: Status = Status.ok,
        covered: list[int] | None = None) -> RunResult:
    return RunResult(name, status, cases=dict(cases or {}), covered=covered)


def results(a, ap, *bs, covered=(3, 4)):
    out = {"A": run("A", a, covered=list(covered)), "A_prime": run("A_prime", ap)}
    names = ["B"] + [f"sibling_{i}" for i in range(1, len(bs))]
    out.update({n: (b if isinstance(b, RunResult) else run(n, b)) for n, b in zip(names, bs)})
    return out, names


@pytest.mark.parametrize(("label", "a", "ap", "bs", "mode", "expected"), [
    ("one discriminating case", {"t": P}, {"t": P}, [{"t": F}], "gated", 1.0),
    ("error on B counts as failing", {"t": P}, {"t": P}, [{"t": E}], "gated", 1.0),
    ("skip on B is not a failure", {"t": P}, {"t": P}, [{"t": S}], "gated", 0.0),
    ("case missing from a working B run fails there", {"t": P}, {"t": P}, [{}], "gated", 1.0),
    ("fails on A′: not passing", {"t": P}, {"t": F}, [{"t": F}], "gated", 0.0),
    ("half the cases discriminate", {"t": P, "u": P}, {"t": P, "u": P}, [{"t": F, "u": P}], "gated", 0.5),
    # One always-passing and one always-failing case: b_fail counts only cases passing on A and A′.
    ("pass-everywhere + fail-everywhere earns nothing", {"t": P, "u": F}, {"t": P, "u": F}, [{"t": P, "u": F}],
     "gated", 0.0),
    ("siblings average", {"t": P}, {"t": P}, [{"t": F}, {"t": P}], "gated", 0.5),
    ("crashed B: every case failed there", {"t": P, "u": P}, {"t": P, "u": P},
     [RunResult("B", Status.crashed)], "gated", 1.0),
    ("rfc pays coverage without discrimination", {"t": P}, {"t": P}, [{"t": P}], "rfc", 0.5),
    ("rfc with discrimination", {"t": P}, {"t": P}, [{"t": F}], "rfc", 1.0),
])
def test_reward_table(label, a, ap, bs, mode, expected):
    res, names = results(a, ap, *bs)
    assert v.compute_reward(config(reward_mode=mode), res, names)["reward"] == pytest.approx(expected), label


def test_coverage_term_and_weight():
    res, names = results({"t": P}, {"t": P}, {"t": F}, covered=(1, 3))
    out = v.compute_reward(config(), res, names)
    assert (out["cov"], out["reward"]) == (0.5, 0.75)
    assert out["coverage"] == {"targets": [3, 4], "covered_targets": [3], "covered_function_lines": [1, 3],
                               "measured": True}
    assert v.compute_reward(config(coverage_targets=()), res, names)["cov"] == 1.0
    assert v.compute_reward(config(coverage_weight=1.0), res, names)["reward"] == 0.5
    assert v.compute_reward(config(coverage_weight=0.0), res, names)["reward"] == 1.0


def test_zero_rewards_always_carry_a_reason():
    res, names = results({}, {}, {})
    assert v.compute_reward(config(), res, names)["reason"].startswith("no test cases collected")
    res, names = results({"t": P}, {"t": P}, {"t": F})
    assert v.compute_reward(config(min_new_tests=2), res, names)["reason"] == (
        "1 test case(s), fewer than min_new_tests=2")
    res, names = results({"t": P}, {"t": F}, {"t": F})
    assert v.compute_reward(config(), res, names)["reason"].startswith("no case passes on both A and A′")
    res, names = results({"t": P}, {"t": P}, {"t": P})
    assert v.compute_reward(config(), res, names)["reason"] == "no case that passes on A and A′ fails on B"
    res, names = results({"t": P}, {"t": P}, {"t": F}, covered=())
    assert v.compute_reward(config(coverage_weight=1.0), res, names)["reason"] == (
        "none of the coverage targets is covered")


def test_product_is_zero_decides_early_only_when_it_is_safe():
    not_run = lambda n: RunResult(n, Status.not_run)  # noqa: E731
    res = {"A": run("A", {"t": F}), "A_prime": not_run("A_prime"), "B": not_run("B")}
    assert v.product_is_zero(res, ["B"])
    res = {"A": not_run("A"), "A_prime": not_run("A_prime"), "B": run("B", {"t": P})}
    assert not v.product_is_zero(res, ["B"])  # A may still have a case B never reported
    res = {"A": run("A", {"t": P}), "A_prime": not_run("A_prime"), "B": run("B", {"t": P})}
    assert v.product_is_zero(res, ["B"])
    res = {"A": run("A", {"t": P}), "A_prime": not_run("A_prime"), "B": run("B", {"t": F})}
    assert not v.product_is_zero(res, ["B"])


def test_config_reader_matches_the_pydantic_model(tmp_path):
    reader_fields = {f.name for f in dataclasses.fields(v.Config)}
    assert reader_fields == set(VerifierConfig.model_fields)
    assert {f.name for f in dataclasses.fields(v.Variants)} == set(VariantDiffs.model_fields)
    model = VerifierConfig(submission="tests/test_r2e_x.py", target_file="src/m.py", target_qualname="C.f",
                           function_lines=[3, 4], coverage_targets=[4], baseline_full_coverage=False,
                           import_roots=["src"], variants=VariantDiffs(siblings=["siblings/01.diff"]))
    model.write(tmp_path / "verifier_config.json")
    cfg = v.read_config(tmp_path / "verifier_config.json")
    assert cfg.variants == v.Variants("broken_patch.diff", "aprime_patch.diff", ("siblings/01.diff",))
    assert (cfg.reward_mode, cfg.coverage_weight, cfg.import_roots) == ("gated", 0.5, ("src",))


@pytest.mark.parametrize(("change", "message"), [
    ({"submission": "../evil.py"}, "unsafe path"),
    ({"import_roots": ["/abs"]}, "unsafe path"),
    ({"reward_mode": "lenient"}, "reward_mode"),
    ({"coverage_weight": 2}, "coverage_weight"),
    ({"min_new_tests": True}, "expected a number"),
    ({"function_lines": ["3"]}, "function_lines"),
    ({"schema_version": 2}, "schema_version"),
])
def test_config_reader_is_strict(tmp_path, change, message):
    raw = VerifierConfig(submission="t.py", target_file="m.py", target_qualname="f", function_lines=[1],
                         coverage_targets=[], baseline_full_coverage=True, import_roots=[""]).model_dump(mode="json")
    (tmp_path / "c.json").write_text(json.dumps({**raw, **change}))
    with pytest.raises(Exception, match=message):
        v.read_config(tmp_path / "c.json")

"""Perturbed and generated calls: one-value changes of recorded calls, receivers, budgets, annotation grids."""

from __future__ import annotations

from repo2rlenv.pipelines.test_synthesis.oracle.differential.grids import Literals
from repo2rlenv.pipelines.test_synthesis.oracle.differential.perturb import (
    candidate_calls,
    generated_calls,
    perturbations,
    take_budget,
)
from repo2rlenv.pipelines.test_synthesis.oracle.differential.records import CallSpec, ParamInfo, TargetInfo
from repo2rlenv.pipelines.test_synthesis.oracle.differential.values import Imports, Value, ValueKind, float_value, render

# The constants of a function such as `if score + bonus >= 50 and label != "audit": ... return -1 if score < 0.5`.
LITS = Literals(ints=[50, -1], floats=[0.5], strs=["capped", "audit", "ok"])

TARGET = TargetInfo(
    kind="function",
    params=[
        ParamInfo(name="score", kind="positional_or_keyword", annotation="int"),
        ParamInfo(name="bonus", kind="positional_or_keyword", annotation="float", has_default=True, default=float_value(0.0)),
        ParamInfo(name="label", kind="positional_or_keyword", annotation="str", has_default=True, default=Value(t="str", v="pass")),
        ParamInfo(name="cap", kind="positional_or_keyword", annotation="Optional[int]", has_default=True, default=Value(t="none")),
    ],
)


def ints(*xs: int) -> list[Value]:
    return [Value(t=ValueKind.INT, v=x) for x in xs]


def shown(call: CallSpec) -> str:
    imports = Imports()
    args = [render(a, imports) for a in call.args] + [f"{k}={render(v, imports)}" for k, v in call.kwargs.items()]
    receiver = render(call.receiver, imports) + "." if call.receiver else ""
    return f"{receiver}f({', '.join(args)})"


def test_perturbations_try_boundaries_first_then_small_changes():
    tiers = perturbations([CallSpec(args=ints(70))], TARGET, LITS)
    first = [shown(c) for c in tiers[0]]
    assert first[:6] == ["f(49)", "f(50)", "f(51)", "f(-2)", "f(-1)", "f(0)"]
    assert "f(70, label='audit')" in first
    assert "f(70, bonus=0.5)" in first
    second = [shown(c) for c in tiers[1]]
    assert {"f(69)", "f(71)", "f(1)", "f(70, cap=0)", "f(70, bonus=1e-06)"} <= set(second)
    everything = [shown(c) for tier in tiers for c in tier]
    assert "f(70)" not in everything  # the original call is not tried again
    assert len(everything) == len(set(everything))
    assert "f(70, label='')" in [shown(c) for c in tiers[2]]


def test_defaults_left_out_of_a_call_stay_out_when_unchanged():
    tiers = perturbations([CallSpec(args=ints(70), kwargs={"label": Value(t="str", v="pass")})], TARGET, Literals())
    for call in (c for tier in tiers for c in tier):
        assert "label" not in call.kwargs or call.kwargs["label"].v != "pass"
        assert "cap" not in call.kwargs or call.kwargs["cap"].t is not ValueKind.NONE


def test_optional_parameters_get_none_and_values_inside_containers_change():
    target = TargetInfo(
        kind="function",
        params=[
            ParamInfo(name="xs", kind="positional_or_keyword", annotation="list[int]"),
            ParamInfo(name="limit", kind="positional_or_keyword", annotation="int | None"),
        ],
    )
    call = CallSpec(args=[Value(t=ValueKind.LIST, items=ints(3, 4, 5)), Value(t=ValueKind.INT, v=2)])
    seen = {shown(c) for tier in perturbations([call], target, Literals()) for c in tier}
    assert {"f([], 2)", "f([3], 2)", "f([3, 4], 2)", "f([2, 4, 5], 2)", "f([3, 4, 5], None)", "f([3, 4, 5], 3)"} <= seen
    assert "f(None, 2)" not in seen


def test_receiver_constructor_arguments_are_perturbed_including_left_out_defaults():
    target = TargetInfo(
        kind="method",
        owner="Account",
        params=[ParamInfo(name="amount", kind="positional_or_keyword")],
        init_params=[
            ParamInfo(name="owner", kind="positional_or_keyword"),
            ParamInfo(name="balance", kind="positional_or_keyword", has_default=True, default=Value(t="int", v=0)),
        ],
    )
    receiver = Value(t=ValueKind.OBJECT, module="bank", qualname="Account", args=[Value(t="str", v="ann")], kw={})
    call = CallSpec(receiver=receiver, args=ints(10))
    seen = {shown(c) for tier in perturbations([call], target, Literals()) for c in tier}
    assert "Account('ann', balance=1).f(10)" in seen
    assert "Account('ann').f(11)" in seen
    assert "Account('').f(10)" in seen


def test_budget_is_respected_and_sampling_is_seeded():
    calls = [CallSpec(args=ints(n)) for n in range(40, 60)]
    tiers = perturbations(calls, TARGET, LITS)
    budget = len(tiers[0]) + 5
    assert len(tiers[1]) > 5
    picked = take_budget(tiers, budget, seed=1)
    assert len(picked) == budget
    assert picked[: len(tiers[0])] == tiers[0]  # whole tiers first, in order
    assert picked == take_budget(tiers, budget, seed=1)
    assert picked != take_budget(tiers, budget, seed=2)
    assert len(candidate_calls(calls, TARGET, "m", Literals(), budget=7, seed=0)) == 7


def test_generated_calls_cover_each_parameter_and_are_deterministic():
    calls = generated_calls(TARGET, "m", LITS, budget=40, seed=0)
    shown_calls = [shown(c) for c in calls]
    assert len(shown_calls) == 40 == len(set(shown_calls))
    assert shown_calls[0] == "f(0)"  # defaults are left out
    assert {"f(50)", "f(0, label='audit')", "f(0, bonus=0.5)", "f(0, cap=50)"} <= set(shown_calls)
    assert "f(0, cap=None)" not in shown_calls  # the default is not spelled out
    assert shown_calls == [shown(c) for c in generated_calls(TARGET, "m", LITS, budget=40, seed=0)]


def test_generated_calls_build_receivers_from_the_constructor_signature():
    target = TargetInfo(
        kind="method",
        owner="Counter",
        params=[ParamInfo(name="n", kind="positional_or_keyword", annotation="int")],
        init_params=[ParamInfo(name="start", kind="positional_or_keyword", annotation="int", has_default=True, default=Value(t="int", v=0))],
    )
    calls = generated_calls(target, "shop.count", Literals(), budget=30, seed=0)
    receivers = {shown(c).split(".f(")[0] for c in calls}
    assert {"Counter()", "Counter(start=1)", "Counter(start=-1)"} <= receivers
    assert all(c.receiver is not None and c.receiver.module == "shop.count" for c in calls)
    unknown_constructor = target.model_copy(update={"init_params": None})
    assert generated_calls(unknown_constructor, "shop.count", Literals(), budget=30, seed=0) == []

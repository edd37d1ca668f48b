"""Judging replayed outcomes: stable facets only, exceptions by type or message, float tolerances, endless heads."""

from __future__ import annotations

from repo2rlenv.pipelines.test_synthesis.oracle.differential.judging import confirmed, judge, make_case
from repo2rlenv.pipelines.test_synthesis.oracle.differential.records import CallSpec, Outcome
from repo2rlenv.pipelines.test_synthesis.oracle.differential.values import Value, float_value



def returns(value: Value, **state: Value) -> Outcome:
    return Outcome(kind="return", value=value, state={f"self.attr:{k}": v for k, v in state.items()} or None)


def raises(qualname: str, message: str = "") -> Outcome:
    return Outcome(kind="raise", exc_module="builtins", exc_qualname=qualname, exc_importable=True, message=message)


def test_judge_keeps_only_facets_stable_across_runs_of_a():
    one, two = Value(t="int", v=1), Value(t="int", v=2)
    noise = [float_value(0.25), float_value(0.75)]
    verdict = judge(returns(noise[0], n=one), returns(noise[1], n=one), returns(noise[0], n=two))
    assert verdict.stable == ["self.attr:n"] and verdict.differing == ["self.attr:n"]
    assert judge(returns(noise[0]), returns(noise[1]), returns(float_value(9.0))).differing == []
    assert judge(returns(one), raises("ValueError"), returns(two)).differing == []
    assert judge(returns(one), returns(one), Outcome(kind="timeout")).differing == []


def test_judge_and_case_for_exceptions():
    same_type = judge(raises("ValueError", "low"), raises("ValueError", "low"), raises("ValueError", "high"))
    assert same_type.differing == ["raise.message"]
    case = make_case(CallSpec(), raises("ValueError", "low"), raises("ValueError", "high"), same_type)
    assert case.match_message and not case.exact_type
    other_type = judge(raises("KeyError"), raises("KeyError"), raises("LookupError"))
    case = make_case(CallSpec(), raises("KeyError"), raises("LookupError"), other_type)
    assert other_type.differing == ["raise.type"] and case.exact_type and not case.match_message
    returned = judge(raises("KeyError"), raises("KeyError"), returns(Value(t="none")))
    assert returned.differing == ["raise.message", "raise.type"]
    assert not make_case(CallSpec(), raises("KeyError"), returns(Value(t="none")), returned).exact_type


def test_case_tolerance_is_tight_only_when_the_versions_are_close():
    a, far, near = float_value(1.0), float_value(1.5), float_value(1.0 + 1e-7)
    for b, rel in ((far, None), (near, 1e-12)):
        verdict = judge(returns(a), returns(a), returns(b))
        assert make_case(CallSpec(), returns(a), returns(b), verdict).approx_rel == rel


def ints(*xs: int) -> Value:
    return Value(t="list", items=[Value(t="int", v=x) for x in xs])


def test_a_third_run_of_a_drops_facets_that_were_equal_by_chance():
    one, two = Value(t="int", v=1), Value(t="int", v=2)
    verdict = judge(returns(one, n=one), returns(one, n=one), returns(two, n=two))
    assert verdict.differing == ["return", "self.attr:n"]
    assert confirmed(verdict, returns(one, n=one), returns(two, n=one)).differing == ["self.attr:n"]
    assert confirmed(verdict, returns(one, n=one), raises("ValueError")).differing == []


def test_an_endless_iterator_is_asserted_up_to_just_past_its_first_difference():
    a = Outcome(kind="return", value=ints(*range(0, 40, 2)), listed=True, prefix=20)
    b = Outcome(kind="return", value=ints(*range(0, 14, 2), 99), listed=True, prefix=20)
    case = make_case(CallSpec(), a, b, judge(a, a, b))
    assert case.expected.prefix == 8 and [x.v for x in case.expected.value.items] == [0, 2, 4, 6, 8, 10, 12, 14]
    early = Outcome(kind="return", value=ints(1, 3), listed=True)
    case = make_case(CallSpec(), a, early, judge(a, a, early))
    assert case.expected.prefix == 5  # a few items of context even when the first one differs


def test_values_that_name_the_recording_machine_are_never_asserted():
    path = Value(t="str", v="/tmp/pytest-of-root/pytest-0/test_x0/data.csv")
    verdict = judge(returns(path), returns(path), returns(Value(t="str", v="other")))
    assert verdict.stable == [] and verdict.differing == []
    inside = Value(t="list", items=[Value(t="int", v=1), Value(t="str", v="<Node at 0x7f3a2b1c9d00>")])
    assert judge(returns(inside), returns(inside), returns(Value(t="list", items=[]))).differing == []
    # A message naming a tmp path: the exception's type is still asserted, its message is not.
    msg = "No such file: '/tmp/pytest-of-root/pytest-0/x'"
    verdict = judge(raises("FileNotFoundError", msg), raises("FileNotFoundError", msg), returns(Value(t="none")))
    assert verdict.differing == ["raise.type"]
    # Paths a function computes from its inputs are behaviour.
    plain = Value(t="str", v="a/b/c.txt")
    assert judge(returns(plain), returns(plain), returns(Value(t="str", v="a/b"))).differing == ["return"]

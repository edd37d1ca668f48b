"""Which distinguishing calls a differential oracle keeps: documented behaviour before incidental exceptions,
wrong-type errors of made-up inputs never, and one case per behaviour."""

from __future__ import annotations

from repo2rlenv.pipelines.test_synthesis.oracle.differential.differential import (
    Distinguishing,
    Origin,
    _Candidate,
    behaviour,
    incidental,
    select,
    usable,
)
from repo2rlenv.pipelines.test_synthesis.oracle.differential.records import CallSpec, Outcome
from repo2rlenv.pipelines.test_synthesis.oracle.differential.values import Value
from repo2rlenv.pipelines.test_synthesis.oracle.differential.writer import TestCase


def candidate(index: int, a: Outcome, origin: Origin = Origin.PERTURBED) -> _Candidate:
    b = Outcome(kind="return", value=Value(t="int", v=-1))
    facets = ["raise.type"] if a.kind == "raise" else ["return"]
    found = Distinguishing(call=CallSpec(), origin=origin, outcome_a=a, outcome_b=b, facets=facets)
    return _Candidate(index=index, found=found, case=TestCase(call=CallSpec(), expected=a), cost=1)


def raising(qualname: str, module: str = "builtins") -> Outcome:
    return Outcome(kind="raise", exc_module=module, exc_qualname=qualname, exc_importable=True, message="m")


RETURNS = Outcome(kind="return", value=Value(t="int", v=3))


def test_incidental_exceptions_are_dropped_when_anything_else_tells_b_apart():
    wrong_type = candidate(0, raising("AttributeError"), Origin.RECORDED)  # first by origin, yet dropped
    documented = candidate(1, raising("ValueError"))
    returned = candidate(2, RETURNS)
    assert [incidental(c) for c in (wrong_type, documented, returned)] == [True, False, False]
    assert [c.index for c in select([wrong_type, documented, returned], max_tests=5)] == [1, 2]


def test_they_are_kept_when_they_are_all_there_is_and_the_suite_made_the_calls():
    recorded = [candidate(0, raising("TypeError"), Origin.RECORDED), candidate(1, raising("AttributeError"), Origin.RECORDED)]
    assert [c.index for c in select(recorded, max_tests=5)] == [0, 1]
    # The library's own exception named like a builtin one is not incidental.
    assert not incidental(candidate(2, raising("TypeError", module="pkg.errors")))


def test_a_wrong_type_error_of_a_made_up_input_is_never_asserted():
    # `LazyObject(0).__setattr__(0, 0)` raising "'int' object is not callable": no job of the function.
    made_up = [candidate(0, raising("TypeError"), Origin.PERTURBED), candidate(1, raising("AttributeError"), Origin.GENERATED)]
    assert select(made_up, max_tests=5) == []
    assert not usable(made_up[0]) and usable(candidate(2, raising("TypeError"), Origin.RECORDED))


def test_near_duplicate_cases_are_kept_once():
    # Three inputs on which A returns 0.0 and B -1: one case; a different value on A is another behaviour.
    zero = Outcome(kind="return", value=Value(t="float", v=0.0))
    same = [candidate(i, zero) for i in range(3)]
    other = candidate(3, RETURNS)
    picked = select([*same, other], max_tests=5)
    assert [c.index for c in picked] == [0, 3]
    assert behaviour(same[0]) == behaviour(same[2]) != behaviour(other)


def test_the_oracles_input_source_is_its_weakest_calls():
    from repo2rlenv.pipelines.test_synthesis.oracle.differential.differential import InputSource, _input_source

    assert _input_source([Origin.RECORDED], guessed=False) is InputSource.RECORDED
    assert _input_source([Origin.RECORDED, Origin.PERTURBED], guessed=True) is InputSource.PERTURBED
    assert _input_source([Origin.GENERATED], guessed=False) is InputSource.GENERATED
    assert _input_source([Origin.GENERATED], guessed=True) is InputSource.GUESSED

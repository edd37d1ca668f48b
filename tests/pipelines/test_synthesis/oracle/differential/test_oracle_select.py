"""Which distinguishing calls a differential oracle keeps: documented behaviour before incidental exceptions."""

from __future__ import annotations

from repo2rlenv.pipelines.test_synthesis.oracle.differential.differential import (
    Distinguishing,
    Origin,
    _Candidate,
    incidental,
    select,
)
from repo2rlenv.pipelines.test_synthesis.oracle.differential.records import CallSpec, Outcome
from repo2rlenv.pipelines.test_synthesis.oracle.differential.values import Value
from repo2rlenv.pipelines.test_synthesis.oracle.differential.writer import TestCase


def candidate(index: int, a: Outcome, origin: Origin = Origin.PERTURBED) -> _Candidate:
    b = Outcome(kind="return", value=Value(t="int", v=-1))
    found = Distinguishing(call=CallSpec(), origin=origin, outcome_a=a, outcome_b=b, facets=["return"])
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


def test_they_are_kept_when_they_are_all_there_is():
    only = [candidate(0, raising("TypeError")), candidate(1, raising("AttributeError"))]
    assert [c.index for c in select(only, max_tests=5)] == [0, 1]
    # The library's own exception named like a builtin one is not incidental.
    assert not incidental(candidate(2, raising("TypeError", module="pkg.errors")))


def test_the_oracles_input_source_is_its_weakest_calls():
    from repo2rlenv.pipelines.test_synthesis.oracle.differential.differential import InputSource, _input_source

    assert _input_source([Origin.RECORDED], guessed=False) is InputSource.RECORDED
    assert _input_source([Origin.RECORDED, Origin.PERTURBED], guessed=True) is InputSource.PERTURBED
    assert _input_source([Origin.GENERATED], guessed=False) is InputSource.GENERATED
    assert _input_source([Origin.GENERATED], guessed=True) is InputSource.GUESSED

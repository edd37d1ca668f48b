"""Judging replayed outcomes: which calls tell the versions apart, and what a test of one asserts.

A call distinguishes when some facet of its outcome is the same in every run of A and different on B
(`judge`, `confirmed`); its test asserts A's stable return and the differing facets (`make_case`), floats
with a tolerance loose enough to read and tight enough to still tell B apart.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from repo2rlenv.pipelines.test_synthesis.oracle.differential.records import CallSpec, Outcome, OutcomeKind
from repo2rlenv.pipelines.test_synthesis.oracle.differential.values import ValueKind, host_specific, same
from repo2rlenv.pipelines.test_synthesis.oracle.differential.writer import TargetRef, TestCase

# Floats that still differ at this tolerance are far enough apart for pytest.approx's default (1e-6).
COARSE_REL = 1e-5
COARSE_ABS = 1e-11
FINE_REL = 1e-12


class FacetVerdict(BaseModel):
    """Which parts of A's outcome a test may assert, and which of them tell B apart."""

    model_config = ConfigDict(frozen=True)

    stable: list[str] = Field(default_factory=list, description="Facets equal in both runs of A.")
    differing: list[str] = Field(default_factory=list, description="Stable facets that B does not share.")


def judge(a1: Outcome, a2: Outcome, b: Outcome, concrete: bool = True) -> FacetVerdict:
    """Compare two runs of A and one of B; an empty `differing` means the call does not distinguish.

    ``concrete=False`` also compares the parts a test cannot write (to report such differences).
    """
    if a1.kind not in (OutcomeKind.RETURN, OutcomeKind.RAISE) or a2.kind is not a1.kind:
        return FacetVerdict()
    if b.kind not in (OutcomeKind.RETURN, OutcomeKind.RAISE):
        return FacetVerdict()  # a hang or a broken setup on B is no behaviour a quick test can assert
    first, second, other = a1.facets(concrete), a2.facets(concrete), b.facets(concrete)
    # A facet naming the recording machine (a tmp path, an address) is never asserted, even when stable.
    stable = {k: v for k, v in first.items() if k in second and same(v, second[k]) and not host_specific(v)}
    if a1.kind is OutcomeKind.RAISE and "raise.type" not in stable:
        return FacetVerdict()  # pytest.raises needs the exception class by name
    differing = [k for k, v in stable.items() if k not in other or not same(v, other[k])]
    return FacetVerdict(stable=sorted(stable), differing=sorted(differing))


def run_specific(a1: Outcome, a2: Outcome, b: Outcome) -> list[str]:
    """Facets equal in both runs of A and different on B that `judge` leaves out because they name the run
    (an object's identity, a temporary path): a difference no test can assert as written."""
    if a1.kind not in (OutcomeKind.RETURN, OutcomeKind.RAISE) or a2.kind is not a1.kind or b.kind is not a1.kind:
        return []
    first, second, other = a1.facets(False), a2.facets(False), b.facets(False)
    return sorted(k for k, v in first.items() if host_specific(v) and k in second and same(v, second[k])
                  and (k not in other or not same(v, other[k])))


def make_case(call: CallSpec, a: Outcome, b: Outcome, verdict: FacetVerdict, entry: TargetRef | None = None) -> TestCase:
    """What to assert for one distinguishing call: A's stable return, and the facets after the call that differ."""
    facets = verdict.differing
    a_facets, b_facets = a.facets(), b.facets()
    coarse = all(k not in b_facets or not same(a_facets[k], b_facets[k], COARSE_REL, COARSE_ABS) for k in facets)
    # In the order the probe read them: reading one may change the next (iterators are consumed).
    state = [k for k in (a.state or {}) if k in facets]
    if a.kind is OutcomeKind.RAISE:
        type_differs = "raise.type" in facets
        return TestCase(
            call=call,
            entry=entry,
            expected=a,
            assert_return=False,
            facets=state,
            match_message="raise.message" in facets and not type_differs,
            exact_type=type_differs and b.kind is OutcomeKind.RAISE,
        )
    returned = a.value
    assert_return = returned is not None and "return" in verdict.stable and (
        "return" in facets or returned.t is not ValueKind.NONE or not state
    )
    if a.prefix is not None and "return" in facets:
        a = _shortest_head(a, b)
    return TestCase(
        call=call,
        entry=entry,
        expected=a,
        assert_return=assert_return,
        facets=state,
        approx_rel=None if coarse else FINE_REL,
    )


# Items kept before the first difference of an endless iterator's head: enough to read what it yields.
HEAD_CONTEXT = 5


def _shortest_head(a: Outcome, b: Outcome) -> Outcome:
    """A's outcome with the head of its endless iterator cut just past the first item B does not share."""
    mine = list(a.value.items or []) if a.value else []
    theirs = list(b.value.items or []) if b.value and b.value.t is ValueKind.LIST else []
    first = next((i for i, x in enumerate(mine) if i >= len(theirs) or not same(x, theirs[i])), len(mine) - 1)
    keep = min(len(mine), max(first + 1, HEAD_CONTEXT))
    value = a.value.model_copy(update={"items": mine[:keep]}) if a.value else None
    return a.model_copy(update={"value": value, "prefix": keep})


def confirmed(verdict: FacetVerdict, first: Outcome, third: Outcome) -> FacetVerdict:
    """The verdict without the facets a third run of A does not reproduce."""
    if third.kind is not first.kind:
        return FacetVerdict()
    again = third.facets()
    mine = first.facets()
    stable = [k for k in verdict.stable if k in again and same(mine[k], again[k])]
    return FacetVerdict(stable=stable, differing=[k for k in verdict.differing if k in stable])

"""Sibling gating: more changes of the same function that the suite misses and the oracle catches, so a
submission graded against all of them cannot overfit one change (the graded reward's `ms`).

The search gates siblings with the run's gate runner and asks the oracle stage, through `SiblingOracle`,
whether the oracle catches one and whether a search aimed at one extends it. It returns what it found
(`SiblingSearch`) and changes no candidate it was given: the gated siblings are copies.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Protocol

from repo2rlenv.pipelines.test_synthesis.candidates import Candidate
from repo2rlenv.pipelines.test_synthesis.options import TestSynthesisOptions

# How far the search looks: this many candidates per sibling wanted, gated this many at a time.
SIBLING_SEARCH_FACTOR, SIBLING_CHUNK = 8, 8


class CandidateGates(Protocol):
    """The run's gate runner (`gate.batch.BatchGateRunner`, or one commit's `commit_driver.CommitGating`)."""

    def check_many(self, candidates: list[Candidate]) -> list[Candidate]: ...


class SiblingOracle(Protocol):
    """What the search needs from the oracle stage, bound to one task's test path."""

    def catches(self, oracle: str, other: Candidate) -> bool:
        """Whether `oracle` kills `other` as the reward counts it."""
        ...

    def crash_only(self, oracle: str, other: Candidate) -> bool:
        """Whether the oracle's bare calls, without their assertions, already kill `other` (it crashes)."""
        ...

    def extend(self, oracle: str, other: Candidate, suffix: str) -> tuple[str, str] | None:
        """The oracle plus tests found for `other`, with where their inputs came from; None if none fit."""
        ...


@dataclass(slots=True)
class SiblingSearch:
    """The siblings kept, the oracle as extended for them, and where the added tests' inputs came from."""

    siblings: list[Candidate] = field(default_factory=list)
    oracle: str = ""
    inputs: list[str] = field(default_factory=list)
    cut: bool = False  # the time budget stopped the search before it had looked at every sibling it could


def survived(cand: Candidate) -> bool:
    """Whether `cand` went through the gates and the covering tests missed it."""
    return bool(cand.gates) and cand.killed is False and all(g.passed for g in cand.gates)


def _text(cand: Candidate) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(cand.files_b.items()))


def find_siblings(cand: Candidate, oracle: str, others: list[Candidate], *, gates: CandidateGates,
                  probe: SiblingOracle, options: TestSynthesisOptions,
                  go_on: Callable[[], bool] = lambda: True) -> SiblingSearch:
    """Up to `options.siblings` of `others` (the function's other candidates, in try order) that survive
    the gates and that the oracle catches, extending the oracle for a sibling it misses when allowed.
    `go_on` is asked before each chunk is gated and each sibling probed: False stops the search with
    what it found (`cut`), as the time budget asks."""
    want = options.siblings
    if want <= 0:
        return SiblingSearch(oracle=oracle)
    found: list[Candidate] = []  # siblings only an assertion catches
    spare: list[Candidate] = []  # siblings that crash where A returns
    inputs: list[str] = []
    seen = {_text(cand)}
    # An extended oracle pays only in the gated form: the RFC's b_fail counts its cases that pass on B.
    searches = want if options.sibling_oracles and options.reward_mode == "gated" else 0
    # Most mutants of a well-tested function are killed: look well past `want`, gating a chunk at a
    # time (one worker batch) and stopping once enough are found.
    pool = [other for other in others[: want * SIBLING_SEARCH_FACTOR]
            if _text(other) not in seen and (other.status == "pending" or survived(other))]
    # Candidates the run gated already are not gated again: those that survived are reused as they are.
    gated = [other.model_copy(deep=True) for other in pool if other.status != "pending"]
    pending = [other for other in pool if other.status == "pending"]
    chunks = [gated] + [pending[i:i + SIBLING_CHUNK] for i in range(0, len(pending), SIBLING_CHUNK)]
    for n, chunk in enumerate(chunks):
        if chunk and not go_on():
            return SiblingSearch(found + spare[: want - len(found)], oracle, inputs, cut=True)
        if n:
            chunk = gates.check_many([other.model_copy(deep=True) for other in chunk])
        for other in chunk:
            text = _text(other)
            if not survived(other) or text in seen:
                continue
            if not go_on():
                return SiblingSearch(found + spare[: want - len(found)], oracle, inputs, cut=True)
            caught = probe.catches(oracle, other)
            if not caught and searches > 0:
                searches -= 1
                extended = probe.extend(oracle, other, f"s{len(inputs) + 1}")
                if extended is not None:
                    (oracle, source), caught = extended, True
                    inputs.append(source)
            if not caught:
                continue
            seen.add(text)
            # A sibling the oracle's bare calls catch (it crashes) pays a file that asserts nothing: such
            # siblings are kept only to fill up when too few change a value.
            (spare if probe.crash_only(oracle, other) else found).append(other)
            if len(found) == want:
                return SiblingSearch(found, oracle, inputs)
    return SiblingSearch(found + spare[: want - len(found)], oracle, inputs)

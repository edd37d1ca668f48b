"""Variety (issue 16, item 6): survivors cluster (a library's exception `__init__`s all lose a statement
unnoticed), so the tasks taken first are those from a place no task has come from yet.

A *place* is what two tasks can share: the function, the module, the kind of change. Before a batch of
gated candidates is synthesized it is ordered by how often each of its places is already taken, in the
order of `PLACES` (a second task from the same function waits longest), the miner's order breaking ties.
"""

from __future__ import annotations

from collections import Counter
from typing import Callable, Iterable

from repo2rlenv.pipelines.test_synthesis.candidates import Candidate

# (what the summary calls it, the candidate's place of that kind), most to least telling of a repeat.
PLACES: tuple[tuple[str, Callable[[Candidate], str]], ...] = (
    ("functions", lambda c: c.function.key),
    ("modules", lambda c: c.function.path),
    ("kinds of change", lambda c: c.mutation_kind or c.operator or c.strategy),
)


def taken(emitted: Iterable[Candidate]) -> list[Counter[str]]:
    """Per place kind, how many emitted tasks come from each place."""
    counts: list[Counter[str]] = [Counter() for _ in PLACES]
    for cand in emitted:
        for (_, place), count in zip(PLACES, counts):
            count[place(cand)] += 1
    return counts


def fresh_first(batch: list[Candidate], emitted: Iterable[Candidate]) -> list[Candidate]:
    """`batch` ordered so that candidates from untaken places come first (stable)."""
    counts = taken(emitted)
    return sorted(batch, key=lambda c: tuple(count[place(c)] for (_, place), count in zip(PLACES, counts)))


def summary(emitted: Iterable[Candidate]) -> dict[str, int]:
    """How many distinct places of each kind the emitted tasks come from."""
    return {name: len(count) for (name, _), count in zip(PLACES, taken(emitted))}

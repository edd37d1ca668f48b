"""Which twin kinds a task grades with: checked at emit time on sampled twins, against the repo's own
covering tests and the oracle.

The verifier draws its twins (A′, B′) anew at every grading (`verifier_twins`); each kind keeps behaviour
by construction. Code that looks at its own source or layout is the exception a construction cannot see
(a module that `inspect.getsource`s itself, a test of line numbers in warnings): so before a task is
emitted, a few twins of A are drawn from fixed seeds and must pass the function's covering tests and the
oracle, and a twin of B must fail the oracle. The first rung of `LADDER` whose twins do is the task's set;
when none does, the task is dropped (a task graded without twins could be pinned).
"""

from __future__ import annotations

import random
from typing import Callable

from repo2rlenv.verifiers.test_synthesis import verifier_twins as vtwins

ALL = tuple(vtwins.KINDS)
# Broadest first: each rung drops what is likelier to trip code that inspects itself. Every rung keeps
# `neutral` and `wrap`, which move instruction offsets, locals and lines inside the function: twins
# without them leave those facts as on A, and a pin on one would tell A′ from B′ (such a task is dropped).
# `opaque` stays on every rung too: it adds fresh locals and lines as `neutral` does, and no more (what it
# reads, stores and calls sits in branches that never run).
LADDER: tuple[tuple[str, ...], ...] = (
    ALL,
    tuple(k for k in ALL if k != "rename"),
    ("padding", "neutral", "jitter", "references", "wrap", "opaque"),
    ("neutral", "jitter", "references", "wrap", "opaque"),
)
SEEDS = (11, 23, 37)


class VariantTexts:
    """The files any variant changes, as A and each B-side variant (B first) has them."""

    def __init__(self, a: dict[str, str], others: list[dict[str, str]]):
        self.paths = sorted({p for files in others for p in files} | set(a))
        self.sides = [a, *others]
        self.plans: dict[str, vtwins.FilePlan] = {}
        for path in self.paths:
            texts = [side.get(path) for side in self.sides]
            if path.endswith(".py") and all(t is not None for t in texts):
                try:
                    self.plans[path] = vtwins.plan_file(path, texts)  # type: ignore[arg-type]
                except vtwins.TwinError:
                    continue

    def twin(self, side: int, seed: int, kinds: tuple[str, ...]) -> dict[str, str]:
        """Side `side`'s changed files (0: A, 1: B, …), twinned from `seed` with `kinds`."""
        rng = random.Random(seed)
        files = {p: t for p, t in self.sides[side].items()}
        for path, plan in self.plans.items():
            files[path] = vtwins.twin_source(files[path], plan.units[side], plan.references[side], rng=rng,
                                             kinds=frozenset(kinds))
        return files


def checked_kinds(texts: VariantTexts, *, a_passes: Callable[[dict[str, str]], bool],
                  b_fails: Callable[[dict[str, str]], bool]) -> tuple[str, ...] | None:
    """The first rung of `LADDER` whose sampled twins of A pass (`a_passes`: the covering tests and the
    oracle) and whose twin of B fails the oracle; None when no rung does."""
    for kinds in LADDER:
        if all(a_passes(texts.twin(0, seed, kinds)) for seed in SEEDS[:2]) and b_fails(texts.twin(1, SEEDS[2], kinds)):
            return kinds
    return None

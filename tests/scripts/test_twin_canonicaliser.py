"""scripts/twin_canonicaliser.py: each level of attacker undoes what it claims to, and never maps B′ to A."""

from __future__ import annotations

import ast
import random
from collections import Counter

import pytest

from repo2rlenv.verifiers.test_synthesis import verifier_twins as vt

A = '''def price(amount, pct, items=()):
    """Discounted."""
    if pct > 100:
        raise ValueError(pct)
    total = amount * (1 - pct / 100)
    for item in items:
        total += item
    return round(total, 2)
'''
B = A.replace("pct > 100", "pct >= 100")


@pytest.fixture(scope="module")
def canon(load_script):
    return load_script("twin_canonicaliser")


def _twins(kinds: set[str], n: int = 15):
    plan = vt.plan_file("shop.py", [A, B])
    rng = random.Random(1)
    for side, text in ((0, A), (1, B)):
        for _ in range(n):
            yield side, vt.twin_source(text, plan.units[side], plan.references[side], rng=rng, kinds=frozenset(kinds))


@pytest.mark.parametrize("level", ["folding", "paths", "aware"])
def test_every_kind_but_opaque_is_undone_and_b_never_is(canon, level):
    a = canon.normal_form(A, "price", level)
    for side, twin in _twins(set(vt.KINDS) - {"opaque"}):
        assert (canon.normal_form(twin, "price", level) == a) == (side == 0), (level, twin)


def test_opaque_twins_resist_the_basic_normaliser_and_the_aware_one_undoes_them(canon):
    a = {level: canon.normal_form(A, "price", level) for level in canon.LEVELS}
    kept = Counter()
    for side, twin in _twins({"opaque"}, 25):
        for level in canon.LEVELS:
            same = canon.normal_form(twin, "price", level) == a[level]
            assert not (side == 1 and same), level
            kept[level] += side == 0 and same
    assert kept["basic"] == 0 and kept["aware"] == 25
    assert kept["folding"] <= kept["paths"] <= kept["aware"]


def test_folding_removes_branches_whose_test_takes_one_value_and_the_stores_only_they_read(canon):
    src = ("def f(x):\n    _k = 5\n    _j = -3\n    if (_k * _k + _j) % 2 == 1:\n        x.boom()\n"
           "    while _k < 0:\n        x.boom()\n    return x\n")
    assert canon.normal_form(src, "f", "folding") == canon.normal_form("def f(x):\n    return x\n", "f", "folding")


def test_paths_relates_two_variables_chosen_by_the_same_identity_test(canon):
    src = ("def f(p):\n    _a = 1 if p is None else 2\n    _b = 5 if p is None else 6\n"
           "    if _b - _a != 4:\n        p.boom()\n    return p\n")
    plain = canon.normal_form("def f(p):\n    return p\n", "f", "paths")
    assert canon.normal_form(src, "f", "paths") == plain
    assert canon.normal_form(src, "f", "folding") != canon.normal_form("def f(p):\n    return p\n", "f", "folding")


def test_a_loop_that_steps_a_variable_leaves_its_tests_undecided_below_aware(canon):
    src = ("def f(p, xs):\n    _a = 1\n    _b = 5\n    for x in xs:\n        _a += 3\n        _b += 3\n"
           "    if (_b - _a) % 3 != 1:\n        p.boom()\n    return p\n")
    assert "boom" in ast.dump(ast.parse(src))
    assert canon.normal_form(src, "f", "paths") != canon.normal_form("def f(p, xs):\n    return p\n", "f", "paths")

"""scripts/reward_figures.py: the two submissions it derives from an oracle (B only, no asserts)."""

from __future__ import annotations

import pytest

ORACLE = '''import pytest

from pkg import f


def test_one():
    assert f(1) == 2


def test_two():
    assert not f(0)
    with pytest.raises(ValueError):
        f(-1)
'''


@pytest.fixture(scope="module")
def figures(load_script):
    return load_script("reward_figures")


def test_no_asserts_keeps_the_calls_and_checks_nothing(figures):
    out = figures.no_asserts(ORACLE)
    assert "assert" not in out and "pytest.raises" not in out
    assert "f(1)" in out and "f(0)" in out and "except BaseException:" in out
    compile(out, "x.py", "exec")


def test_b_only_keeps_the_test_that_kills_b_and_fewest_siblings(figures):
    kills = {"B": ["t.py::test_one", "t.py::test_two"], "sibling_1": ["t.py::test_two"], "sibling_2": []}
    out = figures._b_only(ORACLE, {"kills": kills})
    assert "def test_one" in out and "def test_two" not in out and "from pkg import f" in out
    assert figures._b_only(ORACLE, {"kills": {"B": []}}) is None

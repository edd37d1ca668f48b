"""The cases a change added or edited, and a test file cut down to some of them (human_cases.py)."""

from __future__ import annotations

import ast

import pytest

from repo2rlenv.pipelines.test_synthesis.oracle.human_cases import all_cases, case_of, changed_cases, keep_only

PARENT = '''\
import pytest

from pkg.core import clamp

LOW = 0


@pytest.fixture
def high():
    return 5


def helper(x):
    return clamp(x, LOW, 5)


def test_low():
    assert helper(-1) == 0


class TestClamp:
    def setup_method(self):
        self.top = 5

    def test_inside(self):
        assert helper(3) == 3
'''

CHANGE = PARENT.replace("assert helper(3) == 3", "assert helper(3) == 3\n        assert helper(4) == 4") + '''

@pytest.mark.parametrize("x", [6, 9])
def test_high(x, high):
    assert helper(x) == high


class TestMore:
    def test_equal(self):
        assert helper(5) == 5
'''


@pytest.mark.parametrize("before,after,expected", [
    (None, CHANGE, ["test_low", "TestClamp::test_inside", "test_high", "TestMore::test_equal"]),
    (PARENT, CHANGE, ["TestClamp::test_inside", "test_high", "TestMore::test_equal"]),
    (PARENT, PARENT.replace("helper(-1) == 0", "helper(-1)  ==  0"), []),  # reformatted: the same case
    (PARENT, PARENT + "\n\ndef check_extra():\n    pass\n", []),  # not a case
    (PARENT, "def broken(:\n", []),
], ids=["new file", "added and edited", "reformatted", "helper only", "unparsable"])
def test_changed_cases(before, after, expected):
    assert changed_cases(before, after) == expected


def test_keep_only_keeps_module_code_and_the_chosen_cases():
    kept = keep_only(CHANGE, {"test_high", "TestClamp::test_inside"})
    assert [c.name for c in all_cases(kept)] == ["TestClamp::test_inside", "test_high"]
    tree = ast.parse(kept)
    names = [getattr(n, "name", None) for n in tree.body]
    # Imports, constants, the fixture, the helper and the class's setup stay; TestMore lost its one case.
    assert names == [None, None, None, "high", "helper", "TestClamp", "test_high"]
    assert "def setup_method(self):" in kept and '@pytest.mark.parametrize("x", [6, 9])' in kept
    assert "\n\n\n\n" not in kept


def test_keep_only_removes_a_case_with_its_decorators():
    kept = keep_only(CHANGE, {"test_low"})
    assert "parametrize" not in kept and "class " not in kept and "def test_low" in kept


@pytest.mark.parametrize("nodeid,case", [
    ("tests/test_r2e_x.py::test_high[6]", "test_high"),
    ("tests/test_r2e_x.py::TestClamp::test_inside", "TestClamp::test_inside"),
    ("tests/test_r2e_x.py::test_p[a::b]", "test_p"),
])
def test_case_of(nodeid, case):
    assert case_of(nodeid) == case


def test_keep_only_keeps_a_base_class_without_its_cases():
    source = ("class TestBase:\n    def test_few(self):\n        assert 1\n\n\nclass TestMixin:\n    factor = 2\n\n"
              "    def test_mixed(self):\n        assert 1\n\n\nclass TestEdge(TestBase, TestMixin):\n"
              "    def test_boundary(self):\n        assert 2\n\n\nclass TestOther:\n    def test_x(self):\n        assert 3\n")
    kept = keep_only(source, {"TestEdge::test_boundary"})
    assert [c.name for c in all_cases(kept)] == ["TestEdge::test_boundary"]
    assert "class TestBase:\n    pass\n" in kept and "factor = 2" in kept and "TestOther" not in kept
    ast.parse(kept)

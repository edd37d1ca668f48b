"""Merging a sibling's tests into the oracle: imports once, tests renamed where a name is taken, nothing else."""

from __future__ import annotations

from repo2rlenv.pipelines.test_synthesis.oracle.merge import merge_tests

BASE = '''"""Tests for pkg.mod.f."""

import pytest

from pkg.mod import f


def test_f_1():
    assert f(1) == 2
'''
EXTRA = '''"""Tests for pkg.mod.f."""

import math

from pkg.mod import f


@pytest.mark.parametrize("x", [3, 4])
def test_f_1(x):
    assert f(x) == x + 1


def test_f_2():
    assert math.isclose(f(0.5), 1.5)
'''


def test_tests_and_missing_imports_are_added_without_touching_the_oracle():
    merged = merge_tests(BASE, EXTRA, "s1")
    assert merged is not None
    assert merged.startswith('"""Tests for pkg.mod.f."""\n\nimport pytest\n\nfrom pkg.mod import f\nimport math\n')
    assert merged.count("from pkg.mod import f") == 1 and merged.count("import math") == 1
    assert "def test_f_1():\n    assert f(1) == 2" in merged  # the oracle's own, unchanged
    assert '@pytest.mark.parametrize("x", [3, 4])\ndef test_f_1_s1(x):' in merged  # renamed, decorator kept
    assert merged.endswith("def test_f_2():\n    assert math.isclose(f(0.5), 1.5)\n")


def test_helpers_at_the_top_level_are_not_merged():
    assert merge_tests(BASE, "from pkg.mod import f\n\nHELPER = 3\n\n\ndef test_g():\n    assert f(HELPER)\n", "s1") is None
    assert merge_tests(BASE, "def broken(:\n", "s1") is None
    assert merge_tests(BASE, "import os\n", "s1") is None  # nothing to add

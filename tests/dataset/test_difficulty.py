"""The difficulty label: one point per rule of `RULES`, the label read off the total."""

from __future__ import annotations

import pytest

from repo2rlenv.dataset import difficulty

ORACLE = '''from pkg.mod import Cart, total


def test_total():
    assert total([1, 2]) == 3


def test_nested():
    assert total({"a": [1, 2, 3], "b": [4, 5], "c": {"d": 6}}) == 21


def test_method():
    assert Cart().add(1) == 1
'''


def test_input_nodes_measure_the_richest_call_of_the_function_by_name():
    assert difficulty.input_nodes(ORACLE, "total") > difficulty.COMPLEX_INPUT_NODES
    assert difficulty.input_nodes("from m import f\n\ndef test():\n    assert f(1) == 1\n", "f") == 1
    assert difficulty.input_nodes(ORACLE, "add") == 1  # a method, called through its attribute
    assert difficulty.input_nodes(ORACLE, "absent") == 0
    assert difficulty.input_nodes("def broken(:\n", "f") == 0


@pytest.mark.parametrize(("line_run", "crashes", "covering", "source", "siblings", "points", "label"), [
    (False, True, 0, "f(1)", 0, 0, "easy"),
    (False, False, 0, "f(1)", 0, 1, "easy"),
    (True, False, 0, "f(1)", 0, 2, "easy"),
    (True, False, 3, "f(1)", 0, 3, "medium"),
    (True, True, 3, "f(1)", 4, 3, "medium"),
    (True, False, 3, "f(1)", 4, 4, "hard"),
    (True, False, 5, "f({'a': [1, 2, 3], 'b': [4, 5], 'c': {'d': 6}})", 2, 5, "hard"),
])
def test_points_and_label(line_run, crashes, covering, source, siblings, points, label):
    found = difficulty.features(changed_line_run_by_suite=line_run, b_crashes=crashes, covering_tests=covering,
                                oracle_source=source, function_name="f", siblings=siblings)
    assert (found.points, difficulty.label(found)) == (points, label)


def test_every_rule_is_documented():
    text = (difficulty.__file__.rsplit("repo2rlenv", 1)[0] + "docs/reward.md")
    with open(text, encoding="utf-8") as fh:
        doc = fh.read()
    assert "## Difficulty" in doc and "0–2 points: easy; 3: medium; 4–5: hard" in doc
    assert len(difficulty.RULES) == 5 and f"more than {difficulty.COMPLEX_INPUT_NODES} AST nodes" in doc

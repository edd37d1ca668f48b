"""Boundary constants read from a function's source, and value grids built from annotations."""

from __future__ import annotations

import pytest

from repo2rlenv.pipelines.test_synthesis.oracle.differential.grids import Literals, allows_none, annotation_grid, source_literals
from repo2rlenv.pipelines.test_synthesis.oracle.differential.values import Imports, Value, float_value, render

SOURCE = '''
    def grade(score: int, bonus: float = 0.0, label: str = "pass", cap: Optional[int] = None) -> str:
        """Docstring numbers such as 99 are not boundaries."""
        if cap is not None and score > cap:
            return "capped"
        if score + bonus >= 50 and label != "audit":
            return "ok"
        return -1 if score < 0.5 else False
'''


def test_source_literals_skip_docstrings_and_booleans():
    lits = source_literals(SOURCE)
    assert lits.ints == [50, -1]
    assert lits.floats == [0.5]
    assert lits.strs == ["capped", "audit", "ok"]


def test_source_literals_pick_the_named_function_and_add_constants():
    module = "LIMIT = 7\n\ndef first(x):\n    return x > 1\n\ndef second(x):\n    return x > LIMIT + 2.5\n"
    assert source_literals(module).ints == [1]
    lits = source_literals(module, "second", [Value(t="int", v=7), Value(t="str", v="eu"), float_value(2.5)])
    assert (lits.ints, lits.floats, lits.strs) == ([7], [2.5], ["eu"])


def test_source_literals_of_unparsable_source_are_empty():
    assert source_literals("def broken(:\n") == Literals()


@pytest.mark.parametrize(
    ("annotation", "expected"),
    [
        ("int", ["0", "1", "-1", "2", "49", "50", "51"]),
        ("Optional[str]", ["''", "None", "'a'", "'abc'", "'x'"]),
        ("int | None", ["0", "None", "1", "-1", "2", "49", "50", "51"]),
        ("list[int]", ["[]", "[0]", "[0, 1, -1]", "[-1, 1, 0]"]),
        ("tuple[bool, ...]", ["()", "(False,)", "(False, True)"]),
        ("dict[str, float]", ["{}", "{'': 0.0}"]),
        ("'bool'", ["False", "True"]),
        ("SomeClass", []),
        (None, []),
    ],
)
def test_annotation_grids(annotation, expected):
    lits = Literals(ints=[50], strs=["x"])
    assert [render(v, Imports()) for v in annotation_grid(annotation, lits)] == expected


@pytest.mark.parametrize(
    ("annotation", "expected"),
    [
        ("Optional[int]", True),
        ("int | None", True),
        ("Union[str, None]", True),
        ("'None | int'", True),
        ("int", False),
        ("list[Optional[int]]", False),
        (None, False),
        ("not valid(", False),
    ],
)
def test_allows_none(annotation, expected):
    assert allows_none(annotation) is expected

"""Types of unannotated parameters from how the body uses them: only what no other type could do."""

from __future__ import annotations

import pytest

from repo2rlenv.pipelines.test_synthesis.oracle.differential.infer import inferred_types

SOURCE = '''
def describe(noun, count, ratio, anything, label, shadowed):
    """Docstring."""
    if count > 1 and ratio >= 0.5:
        noun = noun  # rebinding: not inferred below
    text = label.lower()
    for i in range(count):
        pass
    shadowed = 3
    return f"{anything} {text}" + shadowed.title()
'''


def test_types_come_from_uses_only_one_type_allows():
    got = inferred_types(SOURCE, "describe", ["noun", "count", "ratio", "anything", "label", "shadowed"])
    assert got == {"count": "int", "ratio": "float", "label": "str"}


@pytest.mark.parametrize(("source", "expected"), [
    ("def f(x):\n    return x.upper() if x > 0 else x\n", {}),  # str and int evidence disagree
    ("def f(x):\n    return -1 < x\n", {"x": "int"}),
    ("def f(x):\n    return x < 1 or x < 2.5\n", {"x": "float"}),  # an int bound and a float bound: a float
    ("def f(x):\n    return x.split()\n", {}),  # bytes splits too
    ("def f(x):\n    return chr(x)\n", {"x": "int"}),
    ("def f(x:\n", {}),
])
def test_small_cases(source, expected):
    assert inferred_types(source, "f", ["x"]) == expected


def test_a_method_is_found_inside_its_class():
    source = "class C:\n    def m(self, word):\n        return word.casefold()\n"
    assert inferred_types(source, "m", ["word"]) == {"word": "str"}

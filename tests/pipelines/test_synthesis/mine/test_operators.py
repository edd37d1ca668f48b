"""The operator table: each operator on small snippets (source in, exact mutants out), what is never
mutated, formatting preservation, re-application, diffs that `git apply` accepts, and seeded sampling."""

from __future__ import annotations

import subprocess
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from repo2rlenv.pysource.functions import FunctionRecord, extract_functions
from repo2rlenv.pipelines.test_synthesis.mine.mutants import (
    ModuleMutator,
    Mutant,
    apply_mutant,
    enumerate_mutants,
    sample_mutants,
    unified_diff,
)
from repo2rlenv.pipelines.test_synthesis.mine.operators import OPERATOR_LIST, OPERATORS, MutationError, MutationKind

HEADER = "def f(a, b, c, xs, n, self):\n"


def _wrap(body: str) -> str:
    return HEADER + textwrap.indent(body, "    ") + "\n"


def _func(source: str, qualname: str = "f", path: str = "pkg/m.py") -> FunctionRecord:
    return next(r for r in extract_functions(source, path, "pkg.m") if r.qualname == qualname)


def _bodies(body: str, operator: str | None) -> list[str]:
    """The mutated function bodies (header stripped, dedented) of ``body`` under ``operator`` (None: all)."""
    source = _wrap(body)
    mutants = enumerate_mutants(source, _func(source), operators=None if operator is None else [operator])
    return [textwrap.dedent(m.mutated_source.removeprefix(HEADER)).rstrip("\n") for m in mutants]


OPERATOR_CASES = [
    # comparison_flip
    ("comparison_flip", "return a < b", ["return a <= b"]),
    ("comparison_flip", "return a <= b", ["return a < b"]),
    ("comparison_flip", "return a > b", ["return a >= b"]),
    ("comparison_flip", "return a >= b", ["return a > b"]),
    ("comparison_flip", "return a == b", ["return a != b"]),
    ("comparison_flip", "return a != b", ["return a == b"]),
    ("comparison_flip", "return a is None", ["return a is not None"]),
    ("comparison_flip", "return a is not None", ["return a is None"]),
    ("comparison_flip", "return a in xs", ["return a not in xs"]),
    ("comparison_flip", "return a not in xs", ["return a in xs"]),
    ("comparison_flip", "return a < b <= c", ["return a <= b <= c", "return a < b < c"]),
    ("comparison_flip", "def g(y):\n    return y < a\nreturn g(b)", ["def g(y):\n    return y <= a\nreturn g(b)"]),
    # boolean_flip
    ("boolean_flip", "return True", ["return False"]),
    ("boolean_flip", "self.done = False", ["self.done = True"]),
    ("boolean_flip", "return a and b", ["return a or b"]),
    ("boolean_flip", "return a or b", ["return a and b"]),
    ("boolean_flip", "return not a", ["return a"]),
    ("boolean_flip", "return (not a) == b", ["return (a) == b"]),
    ("boolean_flip", "return a and not b", ["return a or not b", "return a and b"]),
    # arithmetic_swap
    ("arithmetic_swap", "return a + b", ["return a - b"]),
    ("arithmetic_swap", "return a - b", ["return a + b"]),
    ("arithmetic_swap", "return a * b", ["return a / b"]),
    ("arithmetic_swap", "return a / b", ["return a * b", "return a // b"]),
    ("arithmetic_swap", "return a // b", ["return a / b"]),
    ("arithmetic_swap", "return a % b", ["return a // b"]),
    ("arithmetic_swap", "self.n += a", ["self.n -= a"]),
    ("arithmetic_swap", "self.n -= a", ["self.n += a"]),
    ("arithmetic_swap", "self.n *= a", ["self.n /= a"]),
    ("arithmetic_swap", "self.n /= a", ["self.n *= a", "self.n //= a"]),
    ("arithmetic_swap", "self.n //= a", ["self.n /= a"]),
    ("arithmetic_swap", "self.n %= a", ["self.n //= a"]),
    ("arithmetic_swap", 'return "total: " + a', []),  # string concatenation is a message
    ("arithmetic_swap", 'return "%d items" % a', []),
    ("arithmetic_swap", 'self.text += "!"', []),
    # off_by_one
    ("off_by_one", "return a + 5", ["return a + 6", "return a + 4"]),
    ("off_by_one", "return a == 0", ["return a == 1", "return a == -1"]),
    ("off_by_one", "return a & 0x10", ["return a & 0x11", "return a & 0xf"]),
    ("off_by_one", "return xs[-1]", ["return xs[-2]", "return xs[-0]"]),
    ("off_by_one", "return range(n)", ["return range(n + 1)", "return range(n - 1)"]),
    ("off_by_one", "return range(len(xs))", ["return range(len(xs) + 1)", "return range(len(xs) - 1)"]),
    ("off_by_one", "return range(1, n)", ["return range(2, n)", "return range(0, n)",
                                          "return range(1, n + 1)", "return range(1, n - 1)"]),
    ("off_by_one", "return range(a, b, c)", ["return range(a + 1, b, c)", "return range(a - 1, b, c)",
                                             "return range(a, b + 1, c)", "return range(a, b - 1, c)"]),
    ("off_by_one", "return xs[a:b]", ["return xs[a + 1:b]", "return xs[a - 1:b]",
                                      "return xs[a:b + 1]", "return xs[a:b - 1]"]),
    ("off_by_one", "return xs[:a if c else b]", ["return xs[:(a if c else b) + 1]",
                                                 "return xs[:(a if c else b) - 1]"]),
    ("off_by_one", "return xs[n - a:]", ["return xs[n - a + 1:]", "return xs[n - a - 1:]"]),
    # condition_negation
    ("condition_negation", "if a:\n    return b\nreturn c", ["if not a:\n    return b\nreturn c"]),
    ("condition_negation", "if a < b:\n    return b\nreturn c", ["if not (a < b):\n    return b\nreturn c"]),
    ("condition_negation", "if a:\n    return b\nelif self.ok():\n    return c",
     ["if not a:\n    return b\nelif self.ok():\n    return c",
      "if a:\n    return b\nelif not self.ok():\n    return c"]),
    ("condition_negation", "while xs.more():\n    xs.pop()", ["while not xs.more():\n    xs.pop()"]),
    ("condition_negation", "return a if c else b", ["return a if not c else b"]),
    ("condition_negation", "return [x for x in xs if x > a]", ["return [x for x in xs if not (x > a)]"]),
    ("condition_negation", "if not a:\n    return b\nreturn c", []),  # boolean_flip drops the `not`
    ("condition_negation", "while True:\n    xs.pop()", []),  # boolean_flip flips the literal
    # return_value
    ("return_value", "return True", ["return False"]),
    ("return_value", "return False", ["return True"]),
    ("return_value", "return 0", ["return 1"]),
    ("return_value", "return 7", ["return 0"]),
    ("return_value", "return a < b", ["return not (a < b)"]),
    ("return_value", "return a + b", ["return None"]),
    ("return_value", "return(a)", ["return None"]),
    ("return_value", "return", []),
    ("return_value", "return None", []),
    ("return_value", "return not a", []),
    # statement_removal
    ("statement_removal", "self.x = a", ["pass"]),
    ("statement_removal", "xs[a] = b", ["pass"]),
    ("statement_removal", "self.x: int = a", ["pass"]),
    ("statement_removal", "n += 1\nreturn n", ["pass\nreturn n"]),
    ("statement_removal", "xs.append(a)", ["pass"]),
    ("statement_removal", "del xs[a]", ["pass"]),
    ("statement_removal", "self.a = a; self.b = b", ["pass; self.b = b", "self.a = a; pass"]),
    ("statement_removal", "if a: self.go()", ["if a: pass"]),
    ("statement_removal", "x = a\nreturn x", []),  # removing a local's assignment could leave it undefined
    ("statement_removal", "x, self.y = a, b\nreturn x", []),
    ("statement_removal", "xs.append(y := a)\nreturn y", []),
    ("statement_removal", "print(a)", []),
    ("statement_removal", 'logger.info("a=%s", a)', []),
    ("statement_removal", "return a", []),
    ("statement_removal", "raise ValueError(a)", []),
    ("statement_removal", '"""Docstring."""\nxs.sort()', ['"""Docstring."""\npass']),
]


@pytest.mark.parametrize(("operator", "body", "expected"), OPERATOR_CASES)
def test_operator_on_snippet(operator: str, body: str, expected: list[str]) -> None:
    assert _bodies(body, operator) == expected


def test_every_operator_has_a_case() -> None:
    assert {case[0] for case in OPERATOR_CASES} == set(OPERATORS)


def test_operator_table_keys_are_unique_and_cover_every_kind() -> None:
    assert len(OPERATORS) == len(OPERATOR_LIST)
    assert all(key == op.name for key, op in OPERATORS.items())
    assert {op.kind for op in OPERATOR_LIST} == set(MutationKind)
    assert {"comparison_flip", "boolean_flip", "arithmetic_swap", "off_by_one", "condition_negation",
            "return_value", "statement_removal"} <= set(OPERATORS)


def test_protected_code_is_never_mutated() -> None:
    body = textwrap.dedent('''\
        """Doc with 1 < 2 and True."""
        @decorate(1 + 2)
        def inner(y: list[int] = 3 + 4) -> tuple[int, 1]:
            ...
        label = f"{a + 1} of {b == 2}"
        g = lambda z=5: z
        assert a, "count was 1 + 1"
        log.debug("n=%d", a + 1)
        print(a > 1)
        if __name__ == "__main__":
            run(a + 1)
        raise ValueError(a - 1)''')
    assert _bodies(body, None) == []


def test_signature_defaults_and_annotations_are_not_mutated() -> None:
    source = "def f(a: int = 1, b: bool = True) -> list[int]:\n    return a\n"
    assert [m.operator for m in enumerate_mutants(source, _func(source))] == ["return_value"]


def test_duplicate_mutants_are_dropped_keeping_the_first_by_position() -> None:
    # return_value (at `return`) and boolean_flip (at `True`) give the same text; off_by_one `0 → 1` likewise.
    source = _wrap("return True")
    assert [(m.operator, m.replacement) for m in enumerate_mutants(source, _func(source))] == [
        ("return_value", "return False")]
    source = _wrap("return 0")
    assert [(m.operator, m.replacement) for m in enumerate_mutants(source, _func(source))] == [
        ("return_value", "return 1"), ("off_by_one", "-1")]


def test_mutants_libcst_refuses_are_dropped() -> None:
    # `while(x)` negated would need a space libcst's validation insists on: dropped, not emitted broken.
    assert _bodies("while(a):\n    xs.pop()", "condition_negation") == []


def test_mutants_are_ordered_by_position_then_operator() -> None:
    source = _wrap("if a < b + 1:\n    self.n += 1")
    mutants = enumerate_mutants(source, _func(source))
    keys = [(m.line, m.col, m.operator) for m in mutants]
    assert keys == sorted(keys)
    assert [(m.operator, m.original, m.replacement) for m in mutants] == [
        ("condition_negation", "a < b + 1", "not (a < b + 1)"),
        ("comparison_flip", "<", "<="),
        ("arithmetic_swap", "+", "-"),
        ("off_by_one", "1", "2"),
        ("off_by_one", "1", "0"),
        ("statement_removal", "self.n += 1", "pass"),
        ("arithmetic_swap", "+=", "-="),
        ("off_by_one", "1", "2"),
        ("off_by_one", "1", "0"),
    ]


FORMATTED = '''\
import math  # unrelated


def score(a,b ,  c):   # odd  spacing
    # a comment that must survive
    if  a   <   b :  # keep  me
        return   (a+b)*c   # tight
    total = [x  for x in range( c )]
    return total
'''


def test_formatting_is_preserved_and_a_token_swap_changes_one_line() -> None:
    mutants = enumerate_mutants(FORMATTED, _func(FORMATTED, "score"))
    flip = next(m for m in mutants if m.operator == "comparison_flip")
    assert flip.mutated_source == FORMATTED.replace("if  a   <   b :", "if  a   <=   b :")
    for mutant in mutants:
        changed = [line for line in mutant.diff.splitlines()
                   if line[:1] in "+-" and not line.startswith(("+++", "---"))]
        assert len(changed) == 2, mutant  # one line out, one line in: nothing else was reformatted
        before_lines = FORMATTED.splitlines()
        after_lines = mutant.mutated_source.splitlines()
        assert [i for i, (x, y) in enumerate(zip(before_lines, after_lines)) if x != y] == [mutant.line - 1]


CLASSES = '''\
import functools


class Outer:
    class Inner:
        @staticmethod
        def method(a):
            return a < 3

    @property
    def value(self):
        return self._v > 0

    @value.setter
    def value(self, v):
        self._v = v + 1

    @functools.cache
    def cached(self, k):
        return k * 2


async def fetch(client, n):
    await client.send(n)
    return n - 1
'''


@pytest.mark.parametrize(
    ("qualname", "lineno", "expected"),
    [
        ("Outer.Inner.method", 7, [("return_value", 8, "return a < 3", "return not (a < 3)"),
                                   ("comparison_flip", 8, "<", "<=")]),
        ("Outer.value", 11, [("return_value", 12, "return self._v > 0", "return not (self._v > 0)"),
                             ("comparison_flip", 12, ">", ">=")]),
        ("Outer.value", 15, [("statement_removal", 16, "self._v = v + 1", "pass"), ("arithmetic_swap", 16, "+", "-")]),
        ("Outer.cached", 19, [("return_value", 20, "return k * 2", "return None"), ("arithmetic_swap", 20, "*", "/")]),
        ("fetch", 23, [("statement_removal", 24, "await client.send(n)", "pass"),
                       ("return_value", 25, "return n - 1", "return None"), ("arithmetic_swap", 25, "-", "+")]),
    ],
)
def test_methods_properties_and_async_functions_are_mutated_in_place(
    qualname: str, lineno: int, expected: list[tuple[str, int, str, str]]
) -> None:
    func = next(r for r in extract_functions(CLASSES, "pkg/c.py", "pkg.c") if r.lineno == lineno)
    assert func.qualname == qualname
    mutants = enumerate_mutants(CLASSES, func, operators=[op for op in OPERATORS if op != "off_by_one"])
    assert [(m.operator, m.line, m.original, m.replacement) for m in mutants] == expected
    for mutant in mutants:
        assert (mutant.path, mutant.qualname) == ("pkg/c.py", qualname)
        assert apply_mutant(CLASSES, mutant) == mutant.mutated_source


def test_apply_mutant_round_trips_and_ids_are_stable() -> None:
    func = _func(FORMATTED, "score")
    mutants = enumerate_mutants(FORMATTED, func)
    again = enumerate_mutants(FORMATTED, func)
    assert [m.mutant_id for m in mutants] == [m.mutant_id for m in again]
    assert len({m.mutant_id for m in mutants}) == len(mutants)
    assert len({m.mutated_source for m in mutants}) == len(mutants)
    mutator = ModuleMutator(FORMATTED, func.path)
    for mutant in mutants:
        assert apply_mutant(FORMATTED, mutant) == mutant.mutated_source == mutator.apply(mutant)
        compile(mutant.mutated_source, "score.py", "exec")


def test_apply_mutant_refuses_a_source_it_does_not_fit() -> None:
    mutant = enumerate_mutants(FORMATTED, _func(FORMATTED, "score"), operators=["comparison_flip"])[0]
    with pytest.raises(MutationError):
        apply_mutant(FORMATTED.replace("<", ">"), mutant)


def test_unknown_operator_and_unparsable_module_raise_mutation_error() -> None:
    func = _func(FORMATTED, "score")
    with pytest.raises(MutationError, match="unknown mutation operator"):
        enumerate_mutants(FORMATTED, func, operators=["no_such_operator"])
    with pytest.raises(MutationError):
        ModuleMutator("def broken(:\n", "pkg/b.py")


def _git(cwd: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, input=stdin, capture_output=True, text=True, check=False)


@pytest.mark.parametrize(
    "source",
    [FORMATTED, FORMATTED.rstrip("\n"), FORMATTED.replace("\n", "\r\n")],
    ids=["plain", "no-final-newline", "crlf"],
)
def test_diff_applies_with_git_and_reproduces_the_mutant(tmp_path: Path, source: str) -> None:
    assert _git(tmp_path, "init", "-q").returncode == 0
    target = tmp_path / "pkg" / "m.py"
    target.parent.mkdir()
    func = _func(source, "score")
    mutants = enumerate_mutants(source, func)
    assert mutants
    for mutant in mutants:
        target.write_bytes(source.encode())
        check = _git(tmp_path, "apply", "--check", "-", stdin=mutant.diff)
        assert check.returncode == 0, check.stderr
        assert _git(tmp_path, "apply", "-", stdin=mutant.diff).returncode == 0
        assert target.read_bytes().decode() == mutant.mutated_source


def test_unified_diff_format() -> None:
    assert unified_diff("a.py", "x = 1\n", "x = 1\n") == ""
    assert unified_diff("a.py", "x = 1\n", "x = 2\n") == (
        "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n")
    assert unified_diff("a.py", "x = 1", "x = 2").endswith("+x = 2\n\\ No newline at end of file\n")


# --- sampling --------------------------------------------------------------------------------------------

SAMPLE_FILES = {
    "pkg/one.py": _wrap("if a < b:\n    self.n += 1\nreturn a * b + c"),
    "pkg/two.py": _wrap("return xs[a:b] if n > 0 else None"),
    "pkg/three.py": _wrap("while a <= b:\n    a += 2\nreturn a == b or c"),
}


def _by_function() -> dict[str, list[Mutant]]:
    out: dict[str, list[Mutant]] = {}
    for path, source in SAMPLE_FILES.items():
        func = _func(source, path=path)
        out[f"{path}::{func.qualname}"] = enumerate_mutants(source, func)
    return out


def test_sample_mutants_is_deterministic_and_seed_dependent() -> None:
    by_function = _by_function()
    first = sample_mutants(by_function, seed=7, max_per_function=100, limit=None)
    assert [m.mutant_id for m in first] == [m.mutant_id for m in sample_mutants(by_function, seed=7,
                                                                                max_per_function=100, limit=None)]
    reversed_input = {key: list(reversed(value)) for key, value in reversed(list(by_function.items()))}
    assert sample_mutants(reversed_input, seed=7, max_per_function=100, limit=None) == first
    other = sample_mutants(by_function, seed=8, max_per_function=100, limit=None)
    assert [m.mutant_id for m in other] != [m.mutant_id for m in first]
    assert sorted(m.mutant_id for m in other) == sorted(m.mutant_id for m in first)
    assert len(first) == sum(len(v) for v in by_function.values())


def test_sample_mutants_spreads_across_functions_and_respects_caps() -> None:
    by_function = _by_function()
    picked = sample_mutants(by_function, seed=3, max_per_function=4, limit=None)
    per_function = Counter(m.path for m in picked)
    assert per_function == {path: 4 for path in SAMPLE_FILES}
    assert {m.path for m in picked[:3]} == set(SAMPLE_FILES)  # one from each function before any repeats
    assert {m.path for m in picked[3:6]} == set(SAMPLE_FILES)
    assert len(sample_mutants(by_function, seed=3, max_per_function=4, limit=5)) == 5
    assert sample_mutants(by_function, seed=3, max_per_function=0, limit=None) == []
    assert sample_mutants({}, seed=3, max_per_function=4, limit=None) == []

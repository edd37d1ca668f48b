"""A′: comments, layout and local renames change the text; behaviour, parameters and docstrings stay."""

from __future__ import annotations

import ast
import textwrap

import libcst as cst
import pytest

from repo2rlenv.pipelines.test_synthesis import aprime
from repo2rlenv.pipelines.test_synthesis.aprime import (
    APrimeError, aprime_diff, best_aprime, check_equivalent, make_aprime, rewrite)
from repo2rlenv.verifiers.test_synthesis.verifier_patch import apply_diff

SHOP = '''#!/usr/bin/env python
# -*- coding: utf-8 -*-
"""Prices."""

# tax rate
TAX = 0.2  # twenty percent


def apply_discount(price, percent):
    """Discounted price."""
    if percent < 0 or percent > 100:  # range check
        raise ValueError("percent out of range")

    factor = 1 - percent / 100
    discounted = round(price * factor,
                       2)
    return discounted
class Cart:
    def __init__(self):
        self.items = []
    # between methods
    def total(self, *, tax=True):
        subtotal = sum(self.items)
        return subtotal * (1 + TAX) if tax else subtotal
'''


def namespace(source: str) -> dict:
    ns: dict = {}
    exec(compile(source, "<m>", "exec"), ns)
    return ns


def test_level_0_is_identity():
    assert make_aprime(SHOP, level=0) == SHOP
    assert aprime_diff("src/shop.py", SHOP, 0) == ""


def test_level_1_drops_comments_and_normalises_blank_lines_only():
    out = make_aprime(SHOP, level=1)
    assert out.startswith("#!/usr/bin/env python\n# -*- coding: utf-8 -*-\n")
    assert "# tax rate" not in out and "twenty percent" not in out and "range check" not in out
    assert "\n\n\nclass Cart:" in out and "\n\n    def total" in out
    assert "factor = 1 - percent / 100\n" in out and "    discounted = round(price * factor,\n" in out
    assert ast.dump(ast.parse(out)) == ast.dump(ast.parse(SHOP))


def test_level_2_renames_locals_but_never_parameters():
    out, renames = rewrite(SHOP, level=2)
    assert sorted(renames.values()) == ["discounted", "factor", "subtotal"]
    assert "def apply_discount(price, percent):" in out and "def total(self, *, tax=True):" in out
    assert "factor" not in out and "discounted =" not in out
    assert "TAX = 0.2" in out and '"""Discounted price."""' in out
    assert "round(price * _v" in out and ", 2)" in out  # the continuation line was joined
    a, b = namespace(SHOP), namespace(out)
    for price, pct in [(10, 0), (10, 100), (99.99, 33)]:
        assert a["apply_discount"](price, pct) == b["apply_discount"](price=price, percent=pct)
    cart_a, cart_b = a["Cart"](), b["Cart"]()
    cart_a.items = cart_b.items = [1, 2]
    assert cart_a.total(tax=False) == cart_b.total(tax=False) and cart_a.total() == cart_b.total()
    assert a["apply_discount"].__doc__ == b["apply_discount"].__doc__


SKIPPED = {
    "locals()": "def f(a):\n    x = a\n    return locals()\n",
    "vars()": "def f(a):\n    x = a\n    return vars()\n",
    "eval": "def f(a):\n    x = a\n    return eval('x')\n",
    "f-string debug": "def f(a):\n    x = a\n    return f'{x=}'\n",
    "frame access": "import sys\ndef f(a):\n    x = a\n    return sys._getframe().f_locals\n",
    "match": "def f(a):\n    x = a\n    match a:\n        case [y]:\n            return y\n    return x\n",
}


@pytest.mark.parametrize("name", list(SKIPPED))
def test_functions_that_can_see_their_locals_keep_them(name):
    out, renames = rewrite(SKIPPED[name], level=2)
    assert renames == {}
    assert "x = a" in out


def test_global_nonlocal_imported_and_private_names_are_kept():
    source = textwrap.dedent('''
        counter = 0
        def bump():
            global counter
            counter += 1
            step = 1
            return step
        def outer():
            total = 0
            seen = []
            def add(n):
                nonlocal total
                total += n
                seen.append(n)
            add(2)
            return total, seen
        def imports():
            import json as js
            from os import path
            def helper():
                return 1
            return js.dumps(path.sep), helper()
        class Box:
            def method(self):
                __hidden = 3
                return __hidden
    ''')
    out, renames = rewrite(source, level=2)
    assert sorted(renames.values()) == ["seen", "step"]
    for kept in ("global counter", "nonlocal total", "total = 0", "import json as js", "def helper",
                 "__hidden = 3"):
        assert kept in out
    a, b = namespace(source), namespace(out)
    assert (a["bump"](), a["outer"](), a["imports"](), a["Box"]().method()) == (
        b["bump"](), b["outer"](), b["imports"](), b["Box"]().method())


TRICKY = {
    "closures and comprehensions": '''
        def f(count, scale=2):
            factor = scale
            items = range(-1, count)
            doubled = [i * factor for i in items if (k := i) >= 0]
            lookup = {v: i for i, v in enumerate(doubled)}
            def inner(y):
                return y * factor
            return doubled, lookup, inner(3), k
    ''',
    "try/with/del/augmented": '''
        import io
        def f(text):
            buffer = io.StringIO(str(text))
            with buffer as handle:
                content = handle.read()
            try:
                number = int(content)
            except ValueError as err:
                number = -1
                message = str(err)
            else:
                message = ""
            number += 1
            temp = number
            del temp
            return number, message
    ''',
    "generators, async, lambdas, star args": '''
        import asyncio
        def gen(*args, **kwargs):
            total = 0
            for value in args:
                total += value
                yield total
            extra = kwargs.get("extra", 0)
            yield extra
        async def coro(x, /, y=1, *, z=2):
            result = x + y + z
            await asyncio.sleep(0)
            return result
        def f(a):
            pick = lambda v, w=a: v + w
            return list(gen(1, 2, extra=a)), asyncio.run(coro(a)), pick(1)
    ''',
    "annotations, decorators, class in function": '''
        import functools
        def deco(fn):
            @functools.wraps(fn)
            def wrapper(*a, **k):
                outcome = fn(*a, **k)
                return outcome
            return wrapper
        @deco  # a comment after a decorator
        def f(a: int) -> "list[int]":
            size: int = a
            class Local:
                width = size
            return [Local.width] * size
    ''',
    "continuations and string concatenation": '''
        def f(a):
            text = ("one "
                    "two")  # comment inside
            joined = a + \\
                1
            data = {
                "k": [1,
                      2],  # trailing
            }
            return text, joined, data
    ''',
}


@pytest.mark.parametrize("name", list(TRICKY))
def test_tricky_sources_round_trip(name):
    source = textwrap.dedent(TRICKY[name])
    for level in (1, 2):
        out = make_aprime(source, level=level)
        compile(out, "<aprime>", "exec")
        assert namespace(source)["f"](3) == namespace(out)["f"](3)
        assert "#" not in out


@pytest.mark.parametrize("source", [
    "",
    "# only a comment\n",
    "x = 1",  # no trailing newline
    "def f(a):\r\n    b = a  # crlf\r\n    return b\r\n",
    "def f(a):\n\tb = a\n\tif b:\n\t\treturn b\n\treturn 0\n",  # tabs become four spaces at level 2
    "def f(a):\n  b = a\n  return b\n",
])
def test_edge_layouts(source):
    for level in (1, 2):
        out = make_aprime(source, level=level)
        compile(out, "<aprime>", "exec")
        if "def f" in source:
            assert namespace(source)["f"](5) == namespace(out)["f"](5)
    if "\t" in source:
        assert "\t" not in make_aprime(source, level=2)


def test_diff_applies_with_the_verifier_patcher():
    diff = aprime_diff("src/shop.py", SHOP, 2)
    assert diff.startswith("--- a/src/shop.py\n+++ b/src/shop.py\n")
    assert apply_diff(diff, {"src/shop.py": SHOP}) == {"src/shop.py": make_aprime(SHOP, level=2)}


def test_equivalence_check_catches_behaviour_changes():
    source = "def f(a):\n    b = a + 1\n    return b\n"
    check_equivalent(source, "def f(a):\n    _v1 = a + 1\n    return _v1\n", {"_v1": "b"})
    with pytest.raises(APrimeError, match="AST"):
        check_equivalent(source, "def f(a):\n    b = a + 2\n    return b\n", {})
    with pytest.raises(APrimeError, match="compiled code"):  # a missed reference turns a local into a global
        check_equivalent(source, "def f(a):\n    _v1 = a + 1\n    return b\n", {"_v1": "b"})
    with pytest.raises(APrimeError, match="compile"):
        check_equivalent(source, "def f(a)\n", {})


def test_best_aprime_falls_back_when_a_level_fails_its_check(monkeypatch):
    assert best_aprime(SHOP)[0] == 2
    def broken_rename(module):  # renames the assignment but misses the use: `factor` would become a global
        return cst.parse_module(module.code.replace("factor = 1", "_v1 = 1")), {"_v1": "factor"}

    monkeypatch.setattr(aprime, "_rename_locals", broken_rename)
    aprime._rewrite_once.cache_clear()  # rewrites are made once per (source, level); this one must be redone
    try:
        assert best_aprime(SHOP) == (1, make_aprime(SHOP, level=1))
        with pytest.raises(APrimeError):
            make_aprime(SHOP, level=2)
    finally:
        aprime._rewrite_once.cache_clear()


def test_each_rewrite_is_made_once_per_source_and_level():
    aprime._rewrite_once.cache_clear()
    first = aprime.rewrite(SHOP, level=2)
    first[1]["mutated"] = "by the caller"
    again = aprime.rewrite(SHOP, level=2)
    assert again[0] == first[0] and "mutated" not in again[1]
    assert aprime._rewrite_once.cache_info().hits == 1
    with pytest.raises(APrimeError):
        make_aprime("def f(:\n", level=1)
    with pytest.raises(APrimeError):  # a failure is remembered as one too
        make_aprime("def f(:\n", level=1)


def test_bad_input():
    with pytest.raises(APrimeError, match="does not parse"):
        make_aprime("def f(:\n", level=1)
    with pytest.raises(ValueError, match="level"):
        make_aprime(SHOP, level=3)
    assert best_aprime("def f(:\n") == (0, "def f(:\n")

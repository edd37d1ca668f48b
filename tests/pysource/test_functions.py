"""Function extraction and discovery: qualnames, line numbers, signatures, and every skip reason."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from repo2rlenv.pysource.functions import (
    FunctionRecord,
    discover_functions,
    extract_functions,
    module_name_for,
)


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


@pytest.mark.parametrize(
    ("path", "roots", "expected"),
    [
        ("src/minicart/pricing.py", ("src", ""), "minicart.pricing"),
        ("minicart/__init__.py", ("src", ""), "minicart"),
        ("src/pkg/sub/__init__.py", ("src", ""), "pkg.sub"),
        ("tool.py", ("src", ""), "tool"),
        ("lib/pkg/mod.py", ("lib",), "pkg.mod"),
        ("lib/pkg/mod.py", ("src",), None),  # under no root
        ("pkg/my-mod.py", ("src", ""), None),  # not an identifier
        ("pkg/class.py", ("src", ""), None),  # a keyword
        ("src/__init__.py", ("src", ""), None),  # the root itself is no module
        ("README.md", ("src", ""), None),
    ],
)
def test_module_name_for(path: str, roots: tuple[str, ...], expected: str | None) -> None:
    assert module_name_for(path, roots) == expected


SAMPLE = '''\
"""Module doc."""
import functools


class Outer:
    class Inner:
        @staticmethod
        @functools.lru_cache(
            maxsize=8,
        )
        def method(
            a: int,  # the first
            b: tuple = (1,),
        ) -> dict[str, int]:
            """Doc line.

            More."""
            x = a + 1

            # a comment
            if x:
                return {"a": x,
                        "b": 2}
            return {}

    @property
    def value(self):
        return self._v

    @value.setter
    def value(self, v):
        self._v = v


async def fetch(url, *, timeout=3.0):
    def closure():
        """Nested doc."""
        return 2
    return await closure()


def one_liner(): return 1
'''


def _by_line(records: list[FunctionRecord]) -> dict[int, FunctionRecord]:
    return {record.lineno: record for record in records}


def test_extract_functions_finds_methods_nested_classes_async_and_decorated() -> None:
    records = extract_functions(SAMPLE, "pkg/m.py", "pkg.m")
    assert [(r.qualname, r.class_name, r.lineno, r.end_lineno, r.is_async) for r in records] == [
        ("Outer.Inner.method", "Outer.Inner", 11, 24, False),
        ("Outer.value", "Outer", 27, 28, False),
        ("Outer.value", "Outer", 31, 32, False),
        ("fetch", None, 35, 39, True),
        ("one_liner", None, 42, 42, False),
    ]  # closure() is not importable, so not a record
    assert all((r.path, r.module) == ("pkg/m.py", "pkg.m") for r in records)


def test_extract_functions_summarises_a_decorated_multiline_method() -> None:
    method = _by_line(extract_functions(SAMPLE, "pkg/m.py", "pkg.m"))[11]
    assert method.name == "method"
    assert method.signature == "def method(a: int, b: tuple = (1,)) -> dict[str, int]"
    assert method.decorators == ["staticmethod", "functools.lru_cache(\n            maxsize=8,\n        )"]
    assert method.docstring == "Doc line.\n\nMore."
    assert method.body_lines == [18, 21, 22, 24]  # docstring, blank and comment lines excluded
    assert method.loc == 5  # x =, if, both lines of the returned dict, return {}


def test_extract_functions_other_records() -> None:
    records = _by_line(extract_functions(SAMPLE, "pkg/m.py", "pkg.m"))
    assert records[27].decorators == ["property"] and records[31].decorators == ["value.setter"]
    assert records[35].signature == "async def fetch(url, *, timeout=3.0)"
    # The closure's def and body lines belong to fetch; the closure's docstring does not count.
    assert records[35].body_lines == [36, 38, 39]
    assert records[35].loc == 4
    assert (records[42].signature, records[42].body_lines, records[42].loc) == ("def one_liner()", [42], 1)


def test_extract_functions_raises_on_a_syntax_error() -> None:
    with pytest.raises(SyntaxError):
        extract_functions("def broken(:\n", "pkg/b.py", "pkg.b")


CORE = '''\
def total(items):
    s = 0
    for i in items:
        s += i
    return s


def tiny(): return 1


def stub(): ...


def todo(self):
    """Later."""
    raise NotImplementedError


def nop():
    pass


def doc_only():
    """Only a doc."""


def outer(x):
    def helper(y):
        return y + 1
    return helper(x) * 2


key = lambda v: v


class Cart:
    def add(self, item):
        self.items.append(item)
        return self

    def big(self):
''' + "".join(f"        self.n{i} = {i}\n" for i in range(11))


def test_discover_functions_src_layout_skips_with_reasons(tmp_path: Path) -> None:
    repo = _write(tmp_path, {
        "src/shop/__init__.py": "",
        "src/shop/core.py": CORE,
        "src/shop/tests/test_core.py": "def test_x():\n    a = 1\n    assert a\n",
        "src/shop/test_helpers.py": "def helper():\n    a = 1\n    return a\n",
        "src/shop/helpers_test.py": "def helper():\n    a = 1\n    return a\n",
        "src/shop/conftest.py": "def fixture():\n    a = 1\n    return a\n",
        "src/shop/_vendor/six.py": "def six():\n    a = 1\n    return a\n",
        "src/shop/gen.py": "# Code generated by protoc. DO NOT EDIT.\ndef g():\n    a = 1\n    return a\n",
        "src/shop/broken.py": "def broken(:\n",
        "src/shop/data-files/x.py": "def x():\n    a = 1\n    return a\n",
        "tests/test_shop.py": "def test_y():\n    a = 1\n    assert a\n",
        "setup.py": "def setup_it():\n    a = 1\n    return a\n",
        "docs/__init__.py": "",
        "docs/conf.py": "def conf():\n    a = 1\n    return a\n",
        ".venv/lib/site.py": "def venv():\n    a = 1\n    return a\n",
        "build/lib/shop/core.py": CORE,
    })
    found, skipped = discover_functions(repo, max_loc=10)
    assert [(f.path, f.module, f.qualname, f.loc) for f in found] == [
        ("src/shop/core.py", "shop.core", "total", 4),
        ("src/shop/core.py", "shop.core", "outer", 3),
        ("src/shop/core.py", "shop.core", "Cart.add", 2),
    ]
    assert skipped == {
        "test_code": 5,
        "vendored": 1,
        "generated": 1,
        "syntax_error": 1,
        "not_importable": 1,
        "not_package_source": 3,  # setup.py, docs/__init__.py, docs/conf.py; .venv and build are pruned
        "trivial_body": 4,
        "too_short": 1,
        "too_long": 1,
        "nested_in_function": 1,
        "lambda": 1,
    }


def test_discover_functions_flat_layout_ignores_top_level_scripts(tmp_path: Path) -> None:
    body = "def f(a):\n    x = a\n    return x\n"
    repo = _write(tmp_path, {"shop/__init__.py": "", "shop/core.py": body, "manage.py": body,
                             "examples/demo.py": body})
    found, skipped = discover_functions(repo)
    assert [(f.path, f.module) for f in found] == [("shop/core.py", "shop.core")]
    assert skipped == {"not_package_source": 2}


def test_discover_functions_single_module_layout(tmp_path: Path) -> None:
    body = "def f(a):\n    x = a\n    return x\n"
    repo = _write(tmp_path, {"tool.py": body, "setup.py": body, "test_tool.py": body})
    found, skipped = discover_functions(repo)
    assert [(f.path, f.module, f.qualname) for f in found] == [("tool.py", "tool", "f")]
    assert skipped == {"not_package_source": 1, "test_code": 1}


def test_discover_functions_single_module_beside_a_test_package(tmp_path: Path) -> None:
    # tests/ with an __init__.py is not the library's package: the top-level module is.
    body = "def f(a):\n    x = a\n    return x\n"
    repo = _write(tmp_path, {"tool.py": body, "tests/__init__.py": "", "tests/test_tool.py": body,
                             "versioneer.py": body, "benchmarks/__init__.py": "", "benchmarks/b.py": body})
    found, skipped = discover_functions(repo)
    assert [(f.path, f.module) for f in found] == [("tool.py", "tool")]
    assert skipped == {"not_package_source": 3, "test_code": 2}


def test_discover_functions_explicit_import_roots(tmp_path: Path) -> None:
    body = "def f(a):\n    x = a\n    return x\n"
    repo = _write(tmp_path, {"lib/pkg/__init__.py": "", "lib/pkg/mod.py": body, "lib/single.py": body})
    assert discover_functions(repo)[0] == []  # nothing detectable without the root
    found, _ = discover_functions(repo, import_roots=["lib"])
    assert [(f.path, f.module) for f in found] == [("lib/pkg/mod.py", "pkg.mod"), ("lib/single.py", "single")]


def test_discover_functions_loc_bounds(tmp_path: Path) -> None:
    repo = _write(tmp_path, {"pkg/__init__.py": "", "pkg/m.py": CORE})
    found, skipped = discover_functions(repo, min_loc=3, max_loc=80)
    assert [f.qualname for f in found] == ["total", "outer", "Cart.big"]
    assert skipped["too_short"] == 2 and "too_long" not in skipped

"""Value specs: encode (probe) -> render (host) -> eval round trips, Python-like equality, approx rendering."""

from __future__ import annotations

import datetime
import math
from decimal import Decimal
from fractions import Fraction

import probe_values as probe  # the probe's own module (see conftest)
import pytest

from repo2rlenv.pipelines.test_synthesis.oracle.differential.values import (
    Approx,
    Imports,
    Value,
    ValueKind,
    float_value,
    is_concrete,
    render,
    same,
)

MODULE = """
    import enum
    from collections import namedtuple
    from dataclasses import dataclass, field

    class Color(enum.Enum):
        RED = 1
        GREEN = "g"

    Pair = namedtuple("Pair", "left right")

    @dataclass
    class Point:
        x: float
        y: float = 0.0
        tags: list = field(default_factory=list)

    class Outer:
        @dataclass(frozen=True)
        class Inner:
            name: str
"""


@pytest.fixture
def rtmod(import_source):
    return import_source("rtmod", MODULE)


def spec_of(obj: object) -> Value:
    raw = probe.Encoder(for_output=True).encode(obj)
    assert raw is not None, f"{obj!r} should be re-creatable"
    return Value.model_validate(raw)


def round_trip(obj: object) -> tuple[Value, object, str]:
    value = spec_of(obj)
    imports = Imports()
    source = render(value, imports)
    namespace: dict[str, object] = {}
    exec("\n".join(imports.lines()), namespace)
    return value, eval(source, namespace), source


PLAIN_VALUES = [
    None,
    True,
    0,
    -12345678901234567890,
    0.1,
    -0.0,
    1e300,
    float("inf"),
    float("-inf"),
    "it's \"quoted\"\n\u00e9",
    b"\x00\xffab",
    [],
    [1, [2, [3.5, "x"]]],
    (),
    (1,),
    (1, (2, 3)),
    set(),
    {3, 1, 2},
    frozenset(),
    frozenset({"a"}),
    {},
    {"a": 1, 2: [None], (1, 2): {"x": 1.5}},
    Decimal("1.10"),
    Fraction(3, 4),
    datetime.date(2024, 2, 29),
    datetime.datetime(2024, 1, 2, 3, 4, 5, 6),
    datetime.timedelta(days=1, seconds=5),
]


@pytest.mark.parametrize("obj", PLAIN_VALUES, ids=repr)
def test_plain_values_round_trip(obj):
    value, again, source = round_trip(obj)
    assert again == obj
    assert type(again) is type(obj)
    assert spec_of(again) == value, source


def test_nan_round_trips_and_equals_itself():
    value, again, source = round_trip(float("nan"))
    assert source == "float('nan')"
    assert math.isnan(again)
    assert same(value, spec_of(again))


def test_classes_round_trip_with_imports(rtmod):
    objs = [
        rtmod.Color.RED,
        rtmod.Color.GREEN,
        rtmod.Pair(1, "b"),
        rtmod.Point(1.5, tags=["a"]),
        rtmod.Outer.Inner("n"),
        [rtmod.Point(0.0), {rtmod.Color.RED: rtmod.Pair(None, ())}],
    ]
    for obj in objs:
        value, again, source = round_trip(obj)
        assert again == obj, source
        assert spec_of(again) == value
    _, _, source = round_trip(rtmod.Outer.Inner("n"))
    assert source == "Outer.Inner(name='n')"


def test_render_imports_nested_class_by_its_outer_name(rtmod):
    imports = Imports()
    render(spec_of([rtmod.Outer.Inner("n"), rtmod.Color.RED]), imports)
    assert imports.lines() == ["from rtmod import Color, Outer"]


def test_unreachable_classes_are_not_recreatable():
    class Local:
        pass

    assert probe.Encoder(for_output=True).encode(Local()) is None
    assert probe.Encoder(for_output=True).encode([1, object()]) is None
    assert probe.Encoder(for_output=True).encode(list(range(1000))) is None


@pytest.mark.parametrize(
    ("left", "right", "equal"),
    [
        (1, 1.0, True),
        (True, 1, True),
        (0.5, 0.5, True),
        (1.0, 1.0000001, False),
        (float("inf"), float("inf"), True),
        (float("inf"), float("-inf"), False),
        ([1], (1,), False),
        ([1, 2], [2, 1], False),
        ({1, 2}, frozenset({2, 1}), True),
        ({"a": 1, "b": 2}, {"b": 2, "a": 1}, True),
        ({"a": 1}, {"a": 2}, False),
        (Decimal("1.10"), Decimal("1.1"), True),
        (Decimal("1.10"), Decimal("1.2"), False),
        ("a", "a", True),
        ("a", b"a", False),
        (None, 0, False),
    ],
    ids=repr,
)
def test_same_follows_python_equality(left, right, equal):
    assert same(spec_of(left), spec_of(right)) is equal
    assert (left == right) is equal


def test_same_on_named_tuples_and_dataclasses(rtmod):
    assert same(spec_of(rtmod.Pair(1, 2)), spec_of((1, 2)))
    assert same(spec_of(rtmod.Point(1.0)), spec_of(rtmod.Point(1.0 + 1e-12)))
    assert not same(spec_of(rtmod.Point(1.0)), spec_of(rtmod.Point(2.0)))


def test_same_on_nan_and_tolerance():
    nan = float_value(float("nan"))
    assert same(nan, nan)
    assert same(float_value(0.1 + 0.2), float_value(0.3))  # within the default 1e-9
    assert not same(nan, float_value(0.0))
    assert same(float_value(1.0), float_value(1.0 + 1e-7), rel_tol=1e-6)
    assert not same(float_value(1.0), float_value(1.0 + 1e-7))


def test_opaque_values_compare_by_hash_and_are_not_concrete():
    a = Value.model_validate(probe.opaque(object()))
    b = Value.model_validate(probe.opaque(object()))
    assert a == b  # memory addresses are not part of the hash
    assert same(a, b)
    assert not same(a, Value.model_validate(probe.opaque(lambda: 1)))
    assert not is_concrete(Value(t=ValueKind.LIST, items=[a]))
    with pytest.raises(ValueError, match="opaque"):
        render(a, Imports())


def test_render_uses_approx_only_where_equality_allows_it():
    imports = Imports()
    approx = Approx()
    assert render(float_value(1.5), imports, approx) == "pytest.approx(1.5)"
    assert render(spec_of([1.5, 2]), imports, approx) == "pytest.approx([1.5, 2])"
    assert render(spec_of({"a": [1.5]}), imports, approx) == "{'a': pytest.approx([1.5])}"
    assert render(spec_of([[1.5], "x"]), imports, approx) == "[pytest.approx([1.5]), 'x']"
    assert render(spec_of({1.5}), imports, approx) == "{1.5}"
    assert render(spec_of(float("inf")), imports, approx) == "float('inf')"
    assert render(spec_of(float("nan")), imports, approx) == "pytest.approx(float('nan'), nan_ok=True)"
    assert render(float_value(2.0), imports, Approx(rel=1e-12)) == "pytest.approx(2.0, rel=1e-12)"
    assert render(spec_of([True, 1.0]), imports, approx) == "[True, pytest.approx(1.0)]"
    assert imports.lines() == ["import pytest"]


def test_rendered_approx_accepts_noise_and_rejects_other_values():
    imports = Imports()
    value = spec_of({"total": 0.30000000000000004, "parts": [0.1, 0.2], "name": "x"})
    namespace = {"pytest": pytest}
    expected = eval(render(value, imports, Approx()), namespace)
    assert {"total": 0.3, "parts": [0.1, 0.2], "name": "x"} == expected
    assert {"total": 0.31, "parts": [0.1, 0.2], "name": "x"} != expected


def test_imports_alias_clashing_names_and_group_stdlib_first():
    imports = Imports(reserved={"result"})
    assert imports.name_for("shop.a", "Item") == "Item"
    assert imports.name_for("shop.b", "Item") == "Item_2"
    assert imports.name_for("shop.c", "result") == "result_2"
    assert imports.name_for("builtins", "ValueError") == "ValueError"
    assert imports.name_for("decimal", "Decimal") == "Decimal"
    imports.use_module("pytest")
    imports.use_module("asyncio")
    assert imports.lines() == [
        "import asyncio",
        "from decimal import Decimal",
        "",
        "import pytest",
        "",
        "from shop.a import Item",
        "from shop.b import Item as Item_2",
        "from shop.c import result as result_2",
    ]


# ------------------------------------------------------------------- inputs: iterators, callables, range


def input_spec(obj: object) -> Value:
    raw = probe.Encoder().encode(obj)
    assert raw is not None, f"{obj!r} should be re-creatable as an input"
    return Value.model_validate(raw)


@pytest.mark.parametrize(
    ("make", "source"),
    [
        (lambda: iter([1, 2]), "iter([1, 2])"),
        (lambda: iter("ab"), "iter(['a', 'b'])"),
        (lambda: reversed([1, 2, 3]), "iter([3, 2, 1])"),
        (lambda: iter(range(3)), "iter([0, 1, 2])"),
        (lambda: range(1, 9, 2), "range(1, 9, 2)"),
        (lambda: len, "len"),
        (lambda: str.lower, "str.lower"),
        (lambda: math.floor, "floor"),
        (lambda: dict.fromkeys, "dict.fromkeys"),
    ],
)
def test_inputs_render_as_a_test_would_write_them(make, source):
    value = input_spec(make())
    imports = Imports()
    assert render(value, imports) == source
    assert value.t is not ValueKind.OPAQUE and is_concrete(value)


def test_an_iterator_input_is_read_without_being_consumed():
    it = iter([1, 2, 3])
    next(it)
    assert render(input_spec(it), Imports()) == "iter([2, 3])"
    assert list(it) == [2, 3]


def test_iterators_lambdas_and_generators_are_not_outputs():
    assert probe.Encoder(for_output=True).encode(iter([1])) is None
    assert probe.Encoder(for_output=True).encode(lambda x: x) is None
    assert probe.Encoder().encode(x for x in [1]) is None


def test_callables_compare_by_name_and_iterators_by_items():
    assert same(input_spec(len), input_spec(len)) and not same(input_spec(len), input_spec(abs))
    assert same(input_spec(iter([1])), input_spec(iter([1]))) and not same(input_spec(iter([1])), input_spec(iter([2])))
    one = Value(t="lambda", v="lambda x: m.f(x)", names={"m": "pkg.m"})
    assert same(one, one) and not same(one, one.model_copy(update={"names": {"m": "pkg.other"}}))


def test_a_lambda_binds_the_exact_names_its_source_uses():
    imports = Imports()
    value = Value(t="lambda", v="lambda x: mi.first(x) + floor(x)", names={"mi": "more_itertools", "floor": "math:floor"})
    assert render(value, imports) == "(lambda x: mi.first(x) + floor(x))"
    assert imports.lines() == ["from math import floor", "", "import more_itertools as mi"]
    clash = Imports()
    clash.name_for("other", "mi")
    with pytest.raises(ValueError, match="mi"):
        render(value, clash)


def test_lazy_builtins_are_written_from_their_function_and_iterators():
    lazy = map(str, [1, 2])
    assert render(input_spec(lazy), Imports()) == "map(str, iter([1, 2]))"
    assert list(lazy) == ["1", "2"]  # untouched
    assert render(input_spec(zip("ab", [1, 2])), Imports()) == "zip(iter(['a', 'b']), iter([1, 2]))"
    assert probe.Encoder().encode(filter(lambda x: x, (i for i in [1]))) is None  # a generator inside

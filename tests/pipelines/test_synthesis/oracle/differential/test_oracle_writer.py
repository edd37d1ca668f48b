"""The test-file writer: readable source, the right assertion per outcome, imports only when used, a line budget."""

from __future__ import annotations

import re
import textwrap

import probe_values as probe  # the probe's own module (see conftest)
import pytest

from repo2rlenv.pipelines.test_synthesis.oracle.differential.records import CallSpec, Outcome, ParamInfo, Step, TargetInfo
from repo2rlenv.pipelines.test_synthesis.oracle.differential.values import Value
from repo2rlenv.pipelines.test_synthesis.oracle.differential.writer import (
    TargetRef,
    TestCase,
    non_blank_lines,
    regex_literal,
    snake,
    write_test_file,
)

MODULE = """
    import asyncio

    class StockError(Exception):
        pass

    def apply_discount(price, percent):
        if percent > 100:
            raise StockError(f"bad percent {percent}")
        return round(price * (100 - percent) / 100, 2)

    def normalize(values):
        values.sort()
        return None

    async def fetch(x):
        await asyncio.sleep(0)
        return [x, x * 0.5]

    def countdown(n):
        while n > 0:
            yield n
            n -= 1

    class LineItem:
        def __init__(self, sku, qty=1):
            self.sku = sku
            self.qty = qty
            self._hidden = 0

        def bump(self, by):
            self.qty += by
            return self.qty

        @property
        def label(self):
            return f"{self.sku} x{self.qty}"

        @classmethod
        def parse(cls, text):
            sku, qty = text.split(":")
            return (sku, int(qty))
"""


@pytest.fixture
def wmod(import_source):
    return import_source("wmod", MODULE)


def v(obj: object) -> Value:
    return Value.model_validate(probe.Encoder().encode(obj))


def ret(value: object, **extra) -> Outcome:
    return Outcome(kind="return", value=v(value), **extra)


def target(qualname: str, kind: str = "function", params: tuple[str, ...] = (), owner: str | None = None) -> TargetRef:
    info = TargetInfo(
        kind=kind, owner=owner, params=[ParamInfo(name=p, kind="positional_or_keyword") for p in params]
    )
    return TargetRef(module="wmod", qualname=qualname, info=info)


def run_tests(source: str) -> list[str]:
    """Exec the file and run each test function; returns the names of those that passed."""
    compile(source, "test_generated.py", "exec")
    namespace: dict[str, object] = {}
    exec(source, namespace)
    passed = []
    for name, fn in namespace.items():
        if name.startswith("test_") and callable(fn):
            try:
                fn()
                passed.append(name)
            except AssertionError:
                pass
    return passed


def test_function_returns_and_exceptions(wmod):
    cases = [
        TestCase(call=CallSpec(args=[v(100.0), v(10)]), expected=ret(90.0)),
        TestCase(
            call=CallSpec(args=[v(5.0)], kwargs={"percent": v(150)}),
            expected=Outcome(
                kind="raise", exc_module="wmod", exc_qualname="StockError", exc_importable=True, message="bad percent 150"
            ),
            match_message=True,
            exact_type=True,
        ),
    ]
    written = write_test_file(target("apply_discount", params=("price", "percent")), cases)
    assert written.source == textwrap.dedent(
        '''\
        """Tests for wmod.apply_discount."""

        import pytest

        from wmod import StockError, apply_discount


        def test_apply_discount_1():
            assert apply_discount(100.0, 10) == pytest.approx(90.0)


        def test_apply_discount_2():
            with pytest.raises(StockError, match='bad percent 150') as excinfo:
                apply_discount(5.0, percent=150)
            assert excinfo.type is StockError
        '''
    )
    assert run_tests(written.source) == ["test_apply_discount_1", "test_apply_discount_2"]
    assert written.test_names == ["test_apply_discount_1", "test_apply_discount_2"]


def test_pytest_is_imported_only_when_used(wmod):
    written = write_test_file(target("apply_discount"), [TestCase(call=CallSpec(args=[v(100), v(50)]), expected=ret(50))])
    assert "import pytest" not in written.source
    assert "assert apply_discount(100, 50) == 50" in written.source
    assert run_tests(written.source) == ["test_apply_discount_1"]


def test_mutated_argument_is_bound_and_asserted(wmod):
    outcome = ret(None, state={"arg:0": v([1, 2, 3])})
    case = TestCase(call=CallSpec(args=[v([3, 1, 2])]), expected=outcome, assert_return=False, facets=["arg:0"])
    written = write_test_file(target("normalize", params=("values",)), [case])
    assert "    values = [3, 1, 2]\n    normalize(values)\n    assert values == [1, 2, 3]\n" in written.source
    assert run_tests(written.source) == ["test_normalize_1"]


def test_async_and_generator_calls(wmod):
    written = write_test_file(
        target("fetch"), [TestCase(call=CallSpec(args=[v(3)]), expected=ret([3, 1.5], awaited=True))]
    )
    assert "import asyncio\n\nimport pytest\n\nfrom wmod import fetch" in written.source
    assert "assert asyncio.run(fetch(3)) == pytest.approx([3, 1.5])" in written.source
    assert run_tests(written.source) == ["test_fetch_1"]
    written = write_test_file(
        target("countdown"), [TestCase(call=CallSpec(args=[v(3)]), expected=ret([3, 2, 1], listed=True))]
    )
    assert "assert list(countdown(3)) == [3, 2, 1]" in written.source
    assert run_tests(written.source) == ["test_countdown_1"]


def test_method_builds_the_receiver_and_asserts_listed_attributes(wmod):
    receiver = Value(t="object", module="wmod", qualname="LineItem", args=[v("ab")], kw={"qty": v(2)})
    outcome = ret(5, state={"self.attr:qty": v(5), "self.attr:sku": v("ab")})
    case = TestCase(call=CallSpec(receiver=receiver, args=[v(3)]), expected=outcome, facets=["self.attr:qty"])
    written = write_test_file(target("LineItem.bump", kind="method", params=("by",), owner="LineItem"), [case])
    body = written.source.split("def test_line_item_bump_1():\n")[1]
    assert body == (
        "    line_item = LineItem('ab', qty=2)\n"
        "    result = line_item.bump(3)\n"
        "    assert result == 5\n"
        "    assert line_item.qty == 5\n"
    )
    assert run_tests(written.source) == ["test_line_item_bump_1"]


def test_property_and_classmethod(wmod):
    receiver = Value(t="object", module="wmod", qualname="LineItem", args=[v("ab")], kw={})
    prop = write_test_file(
        target("LineItem.label", kind="property", owner="LineItem"),
        [TestCase(call=CallSpec(receiver=receiver), expected=ret("ab x1"))],
    )
    assert "    line_item = LineItem('ab')\n    assert line_item.label == 'ab x1'\n" in prop.source
    cls = write_test_file(
        target("LineItem.parse", kind="classmethod", owner="LineItem", params=("text",)),
        [TestCase(call=CallSpec(args=[v("x:3")]), expected=ret(("x", 3)))],
    )
    assert "assert LineItem.parse('x:3') == ('x', 3)" in cls.source
    assert run_tests(prop.source) == ["test_line_item_label_1"]
    assert run_tests(cls.source) == ["test_line_item_parse_1"]


def test_wrong_expectations_fail_when_run(wmod):
    written = write_test_file(target("apply_discount"), [TestCase(call=CallSpec(args=[v(100.0), v(10)]), expected=ret(91.0))])
    assert run_tests(written.source) == []


def test_line_budget_drops_trailing_cases_and_output_is_deterministic(wmod):
    cases = [TestCase(call=CallSpec(args=[v(float(p)), v(10)]), expected=ret(p * 0.9)) for p in range(10)]
    full = write_test_file(target("apply_discount"), cases, max_loc=200)
    assert full.included == list(range(10))
    short = write_test_file(target("apply_discount"), cases, max_loc=12)
    assert non_blank_lines(short.source) <= 12
    assert 0 < len(short.included) < 10 and short.included == list(range(len(short.included)))
    assert write_test_file(target("apply_discount"), cases, max_loc=12) == short
    nothing = write_test_file(target("apply_discount"), cases, max_loc=2)
    assert nothing.included == []


def test_source_never_mentions_where_expectations_came_from(wmod):
    cases = [TestCase(call=CallSpec(args=[v(1.0), v(2)]), expected=ret(0.98))]
    source = write_test_file(target("apply_discount"), cases).source.lower()
    for word in ("mutant", "mutation", "version b", "diff", "broken", "oracle"):
        assert word not in source


def test_locals_do_not_shadow_imports(wmod):
    receiver = Value(t="object", module="wmod", qualname="LineItem", args=[v("ab")], kw={})
    outcome = ret(None, state={"arg:0": v([1])})
    case = TestCase(call=CallSpec(receiver=receiver, args=[v([2])]), expected=outcome, assert_return=False, facets=["arg:0"])
    info = TargetInfo(kind="method", owner="LineItem", params=[ParamInfo(name="LineItem", kind="positional_or_keyword")])
    written = write_test_file(TargetRef(module="wmod", qualname="LineItem.bump", info=info), [case])
    assert "LineItem_value = [2]" in written.source
    compile(written.source, "t.py", "exec")


@pytest.mark.parametrize(("name", "expected"), [("LineItem", "line_item"), ("HTTPServer", "httpserver"), ("x", "x")])
def test_snake(name, expected):
    assert snake(name) == expected


@pytest.mark.parametrize(
    "message",
    ["plain words", "costs $5.00 (max)", "a\\b", "it's [1, 2]?", "line\nbreak", "ends with \\", "*+^|{}"],
)
def test_regex_literal_matches_the_message_itself(message):
    literal = regex_literal(message)
    pattern = eval(literal)
    assert re.search(pattern, message)
    assert not re.search(pattern, message[:-1] + "#")


# ------------------------------------------------------------------------- stateful receivers, iterators

STATEFUL = """
    class Clock:
        def __init__(self):
            self.now = 0

        def tick(self):
            self.now += 1

    class Store:
        def __init__(self, clock, limit=2):
            self.clock = clock
            self.limit = limit
            self._data = {}

        def __setitem__(self, key, value):
            self._data[key] = (value, self.clock.now)

        def __getitem__(self, key):
            return self._data[key][0]

        def __contains__(self, key):
            return key in self._data

        def __len__(self):
            return len(self._data)

        def __iter__(self):
            return iter(self._data)

        def age(self, key):
            return self.clock.now - self._data[key][1]

        def pop_old(self):
            old = [k for k, (_, t) in self._data.items() if self.clock.now - t >= self.limit]
            for k in old:
                del self._data[k]
            return old

    def evens():
        n = 0
        while True:
            yield n
            n += 2

    def double_all(fn, items):
        return [fn(fn(x)) for x in items]
"""


@pytest.fixture
def smod(import_source):
    return import_source("smod", STATEFUL)


def step(name: str, *args: object, on: str | None = None, repeat: int = 1) -> Step:
    return Step(name=name, args=[v(a) for a in args], on=on, repeat=repeat)


def test_receiver_is_driven_through_its_steps_with_protocol_spelling_and_handles(smod):
    clock = Value(t="object", module="smod", qualname="Clock", args=[], kw={})
    receiver = Value(t="object", module="smod", qualname="Store", args=[clock], kw={})
    call = CallSpec(
        receiver=receiver,
        steps=[step("__setitem__", "a", 1), step("tick", on="arg:0", repeat=2), step("__getitem__", "zz")],
        args=[v("a")],
        then=[step("__contains__", "a"), step("pop_old"), step("__getitem__", "a")],
    )
    expected = ret(2, step_raises=[None, None, "builtins:KeyError"], state={
        "then:0": v(True), "then:1": v(["a"]), "then:2.raise": v("builtins:KeyError"), "self.len": v(0),
    })
    case = TestCase(call=call, expected=expected, facets=["then:0", "then:1", "then:2.raise", "self.len"])
    info = TargetInfo(kind="method", owner="Store", params=[ParamInfo(name="key", kind="positional_or_keyword")])
    written = write_test_file(TargetRef(module="smod", qualname="Store.age", info=info), [case])
    body = written.source.split("def test_store_age_1():\n")[1]
    assert body == (
        "    clock = Clock()\n"
        "    store = Store(clock)\n"
        "    store['a'] = 1\n"
        "    for _ in range(2):\n"
        "        clock.tick()\n"
        "    with contextlib.suppress(KeyError):\n"
        "        store['zz']\n"
        "    result = store.age('a')\n"
        "    assert result == 2\n"
        "    assert ('a' in store) is True\n"
        "    assert store.pop_old() == ['a']\n"
        "    with pytest.raises(KeyError):\n"
        "        store['a']\n"
        "    assert len(store) == 0\n"
    )
    assert run_tests(written.source) == ["test_store_age_1"]


def test_endless_iterators_are_asserted_by_their_head_and_callables_by_name(smod):
    written = write_test_file(
        TargetRef(module="smod", qualname="evens", info=TargetInfo(kind="function")),
        [TestCase(call=CallSpec(), expected=ret([0, 2, 4], listed=True, prefix=3))],
    )
    assert "assert list(itertools.islice(evens(), 3)) == [0, 2, 4]" in written.source
    lam = Value(t="lambda", v="lambda x: -x", names={})
    neg = Value(t="ref", module="operator", qualname="neg")
    cases = [TestCase(call=CallSpec(args=[f, v([1])]), expected=ret([1])) for f in (lam, neg)]
    written = write_test_file(TargetRef(module="smod", qualname="double_all", info=TargetInfo(kind="function")), cases)
    assert "assert double_all((lambda x: -x), [1]) == [1]" in written.source
    assert "from operator import neg" in written.source and "assert double_all(neg, [1]) == [1]" in written.source
    assert run_tests(written.source) == ["test_double_all_1", "test_double_all_2"]


def test_seeded_calls_seed_first_and_lazy_raises_consume_the_iterator(smod):
    ref = TargetRef(module="smod", qualname="evens", info=TargetInfo(kind="function"))
    raised = Outcome(kind="raise", exc_module="builtins", exc_qualname="ValueError", exc_importable=True, listed=True)
    cases = [
        TestCase(call=CallSpec(), expected=ret([0, 2], listed=True, prefix=2, seeded=True)),
        TestCase(call=CallSpec(), expected=raised, assert_return=False),
    ]
    source = write_test_file(ref, cases).source
    assert "def test_evens_1():\n    random.seed(0)\n    assert list(itertools.islice(evens(), 2)) == [0, 2]\n" in source
    assert "    with pytest.raises(ValueError):\n        list(evens())\n" in source
    assert source.count("random.seed") == 1 and "import random\n" in source

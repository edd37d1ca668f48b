"""probe.py run for real in a subprocess: harvest real calls, replay them, check a test file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from repo2rlenv.pipelines.test_synthesis.oracle.differential.differential import PROBE_PATH, probe_sources
from repo2rlenv.pipelines.test_synthesis.oracle.differential.records import CheckReport, HarvestReport, ReplayReport
from repo2rlenv.pipelines.test_synthesis.oracle.differential.values import Imports, render

SHOP = {
    "shop/__init__.py": "",
    "shop/model.py": '''
        import asyncio
        import enum
        import random
        import time
        from dataclasses import dataclass, field


        class Size(enum.Enum):
            SMALL = "s"
            LARGE = "l"


        @dataclass
        class Item:
            sku: str
            price: float
            tags: list = field(default_factory=list)


        def price_of(item: Item, qty: int = 1, *, size: Size = Size.SMALL) -> float:
            return item.price * qty * (2 if size is Size.LARGE else 1)


        def apply(fn, x):
            return fn(x)


        class Cart:
            def __init__(self, owner, currency="EUR"):
                self.owner = owner
                self.currency = currency
                self.lines = []
                self._secret = 1

            def add(self, sku, qty=1):
                self.lines.append((sku, qty))
                return len(self.lines)

            @classmethod
            def of(cls, owner):
                return cls(owner)

            @staticmethod
            def tax(x: float) -> float:
                return x * 0.2


        async def later(x):
            await asyncio.sleep(0)
            await asyncio.sleep(0)
            return x + 1


        class Bag:
            def add(self, sku):
                return sku


        def count_up(n):
            for i in range(n):
                yield i


        def forever(x):
            while True:
                x += 1


        def sort_in_place(values):
            values.sort()


        def stamp():
            return object()


        def roll():
            return random.random()


        def clock():
            return time.perf_counter()


        FREE_OVER = 50.0
        ZONES = {"eu": 1.5, "world": 2.5}


        class Table:
            def rate(self, weight):
                return weight * 2


        DEFAULT_TABLE = Table()


        def ship(weight, zone="eu", table=DEFAULT_TABLE):
            if weight * ZONES[zone] >= FREE_OVER:
                return 0.0
            return table.rate(weight)
    ''',
    "tests/test_model.py": '''
        import asyncio

        from shop.model import Bag, Cart, Item, Size, apply, count_up, later, price_of, ship


        def test_price():
            item = Item("a", 2.5, tags=["x"])
            assert price_of(item, qty=2) == 5.0
            assert price_of(item, 2) == 5.0  # the same call spelled differently
            assert price_of(item, size=Size.LARGE) == 5.0


        def test_cart():
            cart = Cart("ann", currency="USD")
            assert cart.add("x") == 1
            assert cart.add("y", qty=3) == 2
            assert Cart.of("bob").add("z") == 1
            assert Cart.tax(10.0) == 2.0
            assert Bag().add("not a cart") == "not a cart"


        def test_unrecreatable():
            assert apply(lambda v: v * 2, 3) == 6
            k = 2
            assert apply(lambda v: v * k, 3) == 6  # a closure


        def test_ship():
            assert ship(2.0) == 4.0
            assert ship(30.0, zone="world") == 0.0


        def test_async_and_generator():
            assert asyncio.run(later(1)) == 2
            assert list(count_up(3)) == [0, 1, 2]
    ''',
}


@pytest.fixture
def shop_runner(make_pair, runner_for):
    pair = make_pair(SHOP, "shop/model.py", "return len(self.lines)", "return len(self.lines) + 1")
    return runner_for(pair)


def run_probe(runner, variant: str, mode: str, spec: dict) -> dict:
    argv = ["{scratch}/probe.py", mode, "--spec", "{scratch}/spec.json", "--out", "{scratch}/out.json"]
    files = probe_sources() if mode != "check" else {"probe.py": PROBE_PATH.read_text()}  # check needs no sibling
    return json.loads(runner(variant, argv, {**files, "spec.json": json.dumps(spec)}))


def harvest(runner, qualname: str, tests: list[str]) -> HarvestReport:
    spec = {"target_file": "shop/model.py", "module": "shop.model", "qualname": qualname, "tests": tests}
    return HarvestReport.model_validate(run_probe(runner, "A", "harvest", spec))


def calls_of(report: HarvestReport) -> list:
    """The recorded calls of the report's only entry (the target itself)."""
    assert [e.qualname for e in report.entries] == [report.entries[0].qualname]
    return report.entries[0].calls


def replay(runner, variant: str, qualname: str, calls: list[dict], **extra) -> ReplayReport:
    spec = {"module": "shop.model", "qualname": qualname, "calls": calls, **extra}
    return ReplayReport.model_validate(run_probe(runner, variant, "replay", spec))


def shown_call(call) -> str:
    imports = Imports()
    parts = [render(a, imports) for a in call.args] + [f"{k}={render(v, imports)}" for k, v in call.kwargs.items()]
    prefix = render(call.receiver, imports) + "." if call.receiver else ""
    return f"{prefix}({', '.join(parts)})"


def test_harvest_records_calls_with_keywords_dataclasses_and_enums(shop_runner):
    report = harvest(shop_runner, "price_of", ["tests/test_model.py::test_price"])
    assert report.error is None and report.tests_exit_code == 0
    assert [shown_call(r.call) for r in calls_of(report)] == [
        "(Item(sku='a', price=2.5, tags=['x']), qty=2)",
        "(Item(sku='a', price=2.5, tags=['x']), size=Size.LARGE)",
    ]
    assert calls_of(report)[0].types == {"item": "shop.model.Item", "qty": "builtins.int", "size": "shop.model.Size"}
    target = report.target
    assert target is not None and target.kind == "function" and target.returns == "float"
    assert [(p.name, p.kind.value, p.annotation) for p in target.params] == [
        ("item", "positional_or_keyword", "shop.model.Item"),
        ("qty", "positional_or_keyword", "int"),
        ("size", "keyword_only", "shop.model.Size"),
    ]
    assert target.params[2].default is not None and target.params[2].default.v == "SMALL"


def test_harvest_records_methods_with_their_constructor_call(shop_runner):
    report = harvest(shop_runner, "Cart.add", ["tests/test_model.py::test_cart"])
    assert [shown_call(r.call) for r in calls_of(report)] == [
        "Cart('ann', currency='USD').('x')",
        "Cart('ann', currency='USD').('y', qty=3)",
        "Cart('bob').('z')",
    ]
    assert report.target is not None and report.target.kind == "method" and report.target.owner == "Cart"
    assert [p.name for p in report.target.init_params or []] == ["owner", "currency"]
    statics = harvest(shop_runner, "Cart.tax", ["tests/test_model.py::test_cart"])
    assert statics.target is not None and statics.target.kind == "staticmethod"
    assert [shown_call(r.call) for r in calls_of(statics)] == ["(10.0)"]


def test_harvest_leaves_out_defaults_and_reports_named_constants(shop_runner):
    report = harvest(shop_runner, "ship", ["tests/test_model.py::test_ship"])
    # The default Table() instance cannot be re-created, but a call that does not pass it needs not.
    assert [shown_call(r.call) for r in calls_of(report)] == ["(2.0)", "(30.0, zone='world')"]
    assert report.target is not None
    assert [render(c, Imports()) for c in report.target.constants] == ["50.0", "'eu'", "'world'", "1.5", "2.5"]


def test_harvest_records_lambdas_by_source_and_skips_closures(shop_runner):
    report = harvest(shop_runner, "apply", ["tests/test_model.py::test_unrecreatable"])
    assert [shown_call(r.call) for r in calls_of(report)] == ["((lambda v: v * 2), 3)"]
    assert report.skipped == {"lambda": 1}


def test_harvest_records_coroutines_and_generators_once_per_call(shop_runner):
    later = harvest(shop_runner, "later", ["tests/test_model.py::test_async_and_generator"])
    assert [shown_call(r.call) for r in calls_of(later)] == ["(1)"]
    assert later.target is not None and later.target.is_async
    gen = harvest(shop_runner, "count_up", ["tests/test_model.py::test_async_and_generator"])
    assert [shown_call(r.call) for r in calls_of(gen)] == ["(3)"]
    assert gen.target is not None and gen.target.is_generator


def test_harvest_reports_an_unknown_target_as_an_error(shop_runner):
    report = harvest(shop_runner, "no_such_function", ["tests/test_model.py::test_price"])
    assert report.error is not None and "no_such_function" in report.error


def test_replay_records_returns_state_and_differences(shop_runner):
    receiver = {"t": "object", "module": "shop.model", "qualname": "Cart", "args": [{"t": "str", "v": "ann"}], "kw": {}}
    calls = [{"receiver": receiver, "args": [{"t": "str", "v": "x"}], "kwargs": {}}]
    on_a = replay(shop_runner, "A", "Cart.add", calls).outcomes[0]
    on_b = replay(shop_runner, "B", "Cart.add", calls).outcomes[0]
    assert on_a.kind == "return" and on_a.value is not None and on_a.value.v == 1
    assert on_b.value is not None and on_b.value.v == 2
    assert on_a.state is not None and sorted(on_a.state) == ["self.attr:currency", "self.attr:lines", "self.attr:owner"]
    assert render(on_a.state["self.attr:lines"], Imports()) == "[('x', 1)]"


def test_replay_outcomes_for_raises_timeouts_async_generators_and_mutation(shop_runner):
    def call(qualname: str, *args: dict, receiver: dict | None = None) -> list[dict]:
        return [{"receiver": receiver, "args": list(args), "kwargs": {}}]

    item = {"t": "dataclass", "module": "shop.model", "qualname": "Item", "fields": {"sku": {"t": "str", "v": "a"}, "price": {"t": "float", "v": "2.0"}}}
    five = {"t": "int", "v": 5}
    nums = {"t": "list", "items": [{"t": "int", "v": 2}, {"t": "int", "v": 1}]}
    results = {
        "price_of": replay(shop_runner, "A", "price_of", call("price_of", item, five) + call("price_of", five)).outcomes,
        "forever": replay(shop_runner, "A", "forever", call("forever", five), call_timeout=0.2).outcomes,
        "later": replay(shop_runner, "A", "later", call("later", five)).outcomes,
        "count_up": replay(shop_runner, "A", "count_up", call("count_up", five)).outcomes,
        "sort_in_place": replay(shop_runner, "A", "sort_in_place", call("sort_in_place", nums)).outcomes,
        "stamp": replay(shop_runner, "A", "stamp", call("stamp") + call("stamp")).outcomes,
        "bad_receiver": replay(shop_runner, "A", "Cart.add", call("", five, receiver={"t": "object", "module": "shop.model", "qualname": "Cart", "args": [], "kw": {}})).outcomes,
    }
    ok, raised = results["price_of"]
    assert ok.kind == "return" and ok.value is not None and ok.value.v == "10.0"
    assert raised.kind == "raise" and raised.exc_qualname == "AttributeError" and raised.exc_importable
    assert "price" in (raised.message or "")
    assert results["forever"][0].kind == "timeout"
    assert results["later"][0].awaited and results["later"][0].value.v == 6
    assert results["count_up"][0].listed and render(results["count_up"][0].value, Imports()) == "[0, 1, 2, 3, 4]"
    mutated = results["sort_in_place"][0]
    assert mutated.value.t == "none" and render(mutated.state["arg:0"], Imports()) == "[1, 2]"
    first, second = results["stamp"]
    assert first.value.t == "opaque" and first.value == second.value  # no memory address in the hash
    assert results["bad_receiver"][0].kind == "error" and "TypeError" in (results["bad_receiver"][0].message or "")


def test_replay_seeds_random_and_marks_the_calls_that_draw_from_it(shop_runner):
    calls = [{"receiver": None, "args": [], "kwargs": {}}]
    first, second = (replay(shop_runner, "A", "roll", calls).outcomes[0] for _ in range(2))
    assert first.kind == second.kind == "return" and first.seeded and second.seeded
    assert first.value == second.value
    assert not replay(shop_runner, "A", "price_of", [{"receiver": None, "args": [{"t": "int", "v": 1}], "kwargs": {}}]).outcomes[0].seeded
    timed = [replay(shop_runner, "A", "clock", calls).outcomes[0] for _ in range(2)]
    assert timed[0].value != timed[1].value and not timed[0].seeded  # other nondeterminism stays


def test_check_reports_each_test(shop_runner, tmp_path: Path):
    source = (
        "from shop.model import Cart\n\n"
        "def test_passes():\n    assert Cart('a').add('x') == 1\n\n"
        "def test_fails():\n    assert Cart('a').add('x') == 5\n"
    )
    spec = {"test_path": "tests/test_generated.py", "source": source}
    on_a = CheckReport.model_validate(run_probe(shop_runner, "A", "check", spec))
    on_b = CheckReport.model_validate(run_probe(shop_runner, "B", "check", spec))
    assert on_a.results == {"test_passes": "passed", "test_fails": "failed"}
    assert on_b.results == {"test_passes": "failed", "test_fails": "failed"}
    broken = CheckReport.model_validate(run_probe(shop_runner, "A", "check", {"test_path": "tests/test_x.py", "source": "def ("}))
    assert broken.results == {} and broken.collection_errors

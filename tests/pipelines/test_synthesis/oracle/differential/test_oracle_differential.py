"""The differential oracle end to end on tiny A/B repos, with real subprocesses."""

from __future__ import annotations

import pytest

from repo2rlenv.pipelines.test_synthesis.oracle.differential import NoOracle, Origin, synthesize_differential

TEST_PATH = "tests/test_r2e_oracle.py"

SHOP = {
    "shop/__init__.py": "",
    "shop/rules.py": '''
        import asyncio
        import random
        import time
        from dataclasses import dataclass, field
        from typing import Optional


        def is_adult(age: int) -> bool:
            return age >= 18


        def total(xs, start=0):
            s = start
            for i in range(len(xs)):
                s += xs[i]
            return s


        def withdraw(balance: int, amount: int) -> int:
            if amount > balance:
                raise ValueError("insufficient funds")
            return balance - amount


        def safe_div(a, b):
            if b == 0:
                raise ZeroDivisionError("b is zero")
            return a / b


        def area(r: float) -> float:
            return 3.14159 * r * r


        async def scaled(x: int, factor: int = 2) -> int:
            await asyncio.sleep(0)
            return x * factor


        def double(x):
            return x * 2


        def shout(s: str) -> str:
            return s.upper() + "!"


        def noisy(x):
            return time.perf_counter() + x


        def clamp(x: int, hi: Optional[int] = None) -> int:
            if hi is not None and x > hi:
                return hi
            return max(x, 0)


        @dataclass
        class Money:
            amount: int
            note: str = field(default="", compare=False)


        def pay(amount):
            return Money(amount, note="paid")


        class Cart:
            def __init__(self, owner="anon"):
                self.owner = owner
                self.count = 0
                self.items = []

            def add(self, name, qty=1):
                self.items.append(name)
                self.count += qty


        class Account:
            def __init__(self, owner, balance=0):
                self.owner = owner
                self.balance = balance

            def deposit(self, amount):
                self.balance += amount
                return time.perf_counter()
    ''',
    "tests/test_rules.py": '''
        import asyncio

        import pytest

        from shop.rules import (Account, Cart, area, double, is_adult, noisy, pay, safe_div, scaled, shout, total,
                                withdraw)


        def test_is_adult():
            assert is_adult(30)
            assert not is_adult(5)


        def test_total():
            assert total(xs=[1, 2, 3], start=0) > 0


        def test_withdraw():
            assert withdraw(10, 3) == 7
            with pytest.raises(ValueError):
                withdraw(1, 5)


        def test_safe_div():
            assert safe_div(6, 3) == 2
            with pytest.raises(Exception):
                safe_div(1, 0)


        def test_area():
            assert area(2.0) == pytest.approx(12.56636)


        def test_scaled():
            assert asyncio.run(scaled(2)) == 4


        def test_double():
            assert double(4) == 8


        def test_shout():
            assert shout("a\\ud800") == "A\\ud800!"


        def test_noisy():
            assert noisy(1) >= 1


        def test_pay():
            assert pay(3).amount == 3


        def test_cart():
            cart = Cart("bob")
            cart.add("apple", qty=3)
            assert "apple" in cart.items


        def test_account():
            account = Account("ann")
            account.deposit(10)
    ''',
}
RULES = "shop/rules.py"


@pytest.fixture
def synthesize(make_pair, runner_for):
    """Build A and B (one replacement in shop/rules.py), run the oracle; returns (result, (A, B))."""

    def run(old: str, new: str, qualname: str, tests: list[str], **options):
        pair = make_pair(SHOP, RULES, old, new)
        result = synthesize_differential(
            runner=runner_for(pair),
            target_file=RULES,
            module="shop.rules",
            qualname=qualname,
            function_source_a=(pair[0] / RULES).read_text(),
            covering_tests=[f"tests/test_rules.py::{t}" for t in tests],
            test_path=TEST_PATH,
            **options,
        )
        return result, pair

    return run


def test_threshold_boundary_is_found_by_perturbing_recorded_calls(synthesize, separates):
    result, pair = synthesize("return age >= 18", "return age > 18", "is_adult", ["test_is_adult"])
    separates(result, pair, TEST_PATH)
    assert result.harvested == 2
    assert result.tried > result.harvested
    assert [d.origin for d in result.distinguishing] == [Origin.PERTURBED]
    assert "assert is_adult(18) is True" in result.test_source


def test_a_lone_surrogate_in_a_recorded_call_is_read_back(synthesize, separates):
    # The probe's report holds "\\ud800" (valid for Python's json, not for a strict JSON parser): mdurl's
    # suite encodes such strings, and every harvest of its functions was "unreadable".
    result, pair = synthesize('return s.upper() + "!"', 'return s.upper() + "?"', "shout", ["test_shout"])
    separates(result, pair, TEST_PATH)
    assert result.harvested >= 1
    assert "\\ud800" in result.test_source


def test_off_by_one_loop_is_caught_with_the_recorded_keyword_call(synthesize, separates):
    result, pair = synthesize("range(len(xs))", "range(len(xs) - 1)", "total", ["test_total"])
    separates(result, pair, TEST_PATH)
    assert result.harvested == result.tried == 1
    assert result.distinguishing[0].origin is Origin.RECORDED
    assert result.test_source.endswith("def test_total_1():\n    assert total([1, 2, 3]) == 6\n")


def test_method_that_updates_state_wrongly(synthesize, separates):
    result, pair = synthesize("self.count += qty", "self.count += 1", "Cart.add", ["test_cart"])
    separates(result, pair, TEST_PATH)
    assert "    cart = Cart(owner='bob')\n    cart.add('apple', qty=3)\n    assert cart.count == 3\n" in result.test_source
    assert result.distinguishing[0].facets == ["self.attr:count"]


def test_exception_raised_in_the_wrong_branch(synthesize, separates):
    result, pair = synthesize("if amount > balance:", "if amount >= balance:", "withdraw", ["test_withdraw"])
    separates(result, pair, TEST_PATH)
    outcomes = {(d.outcome_a.kind.value, d.outcome_b.kind.value) for d in result.distinguishing}
    assert outcomes == {("return", "raise")}


def test_exception_of_another_type_is_asserted_exactly(synthesize, separates):
    result, pair = synthesize('raise ZeroDivisionError("b is zero")', 'raise ValueError("b is zero")', "safe_div", ["test_safe_div"])
    separates(result, pair, TEST_PATH)
    assert "with pytest.raises(ZeroDivisionError) as excinfo:\n        safe_div(1, 0)\n" in result.test_source
    assert "assert excinfo.type is ZeroDivisionError" in result.test_source


def test_float_formula(synthesize, separates):
    result, pair = synthesize("3.14159 * r * r", "3.14159 * r * 2", "area", ["test_area"])
    separates(result, pair, TEST_PATH)
    assert "pytest.approx(" in result.test_source
    assert result.n_tests == 5  # the default max_tests; many inputs separate r*r from r*2


def test_async_function(synthesize, separates):
    result, pair = synthesize("return x * factor", "return x + factor", "scaled", ["test_scaled"], max_tests=2)
    separates(result, pair, TEST_PATH)
    assert result.n_tests == 2
    assert "import asyncio" in result.test_source and "asyncio.run(scaled(" in result.test_source


def test_equivalent_change_finds_nothing(synthesize):
    result, _ = synthesize("return x * 2", "return x + x", "double", ["test_double"])
    assert not result.found
    assert result.reason == NoOracle.NO_DISTINGUISHING_INPUT == "no distinguishing input found"
    assert result.test_source is None
    assert result.tried > result.harvested == 1


def test_nondeterministic_results_are_never_asserted(synthesize, separates):
    result, _ = synthesize("return time.perf_counter() + x", "return time.perf_counter() + x + 1", "noisy", ["test_noisy"])
    assert not result.found and result.reason == NoOracle.NO_DISTINGUISHING_INPUT
    result, pair = synthesize("self.balance += amount", "self.balance = amount", "Account.deposit", ["test_account"])
    separates(result, pair, TEST_PATH)
    assert "result" not in result.test_source and "perf_counter" not in result.test_source
    assert all(d.facets == ["self.attr:balance"] for d in result.distinguishing)
    assert "account = Account('ann', balance=1)" in result.test_source  # a perturbed constructor argument


def test_inputs_are_generated_from_annotations_without_covering_tests(synthesize, separates):
    result, pair = synthesize("return max(x, 0)", "return max(x, 1)", "clamp", [])
    separates(result, pair, TEST_PATH)
    assert result.harvested == 0
    assert {d.origin for d in result.distinguishing} == {Origin.GENERATED}


def test_tests_that_do_not_separate_when_run_are_dropped(synthesize):
    # Money.note is excluded from ==, so the changed note is visible in the spec but not to an assert.
    result, _ = synthesize('Money(amount, note="paid")', 'Money(amount, note="due")', "pay", ["test_pay"])
    assert not result.found
    assert result.reason == NoOracle.NOT_SEPARATED
    assert "passed on A, passed on B" in (result.detail or "")


def test_a_target_that_cannot_be_imported_is_a_probe_failure(synthesize):
    result, _ = synthesize("return x * 2", "return x * 3", "nowhere", ["test_double"])
    assert not result.found and result.reason == NoOracle.PROBE_FAILED
    assert "nowhere" in (result.detail or "")

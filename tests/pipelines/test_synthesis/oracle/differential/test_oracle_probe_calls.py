"""The probe on iterators, callables, private helpers and stateful objects: what harvest records, what replay reports."""

from __future__ import annotations

import json

import pytest

from repo2rlenv.pipelines.test_synthesis.oracle.differential.differential import probe_sources
from repo2rlenv.pipelines.test_synthesis.oracle.differential.records import CallSpec, HarvestReport, ReplayReport
from repo2rlenv.pipelines.test_synthesis.oracle.differential.values import Imports, Value, render

@pytest.fixture
def lib_runner(make_pair, runner_for, seq_lib):
    return runner_for(make_pair(seq_lib, "lib/seq.py", "self._seen.get(key, 0) + self.step", "self._seen.get(key, 0) + 1"))


def run_probe(runner, variant: str, mode: str, spec: dict) -> dict:
    argv = ["{scratch}/probe.py", mode, "--spec", "{scratch}/spec.json", "--out", "{scratch}/out.json"]
    return json.loads(runner(variant, argv, {**probe_sources(), "spec.json": json.dumps(spec)}))


def harvest(runner, qualname: str, test: str) -> HarvestReport:
    spec = {"target_file": "lib/seq.py", "module": "lib.seq", "qualname": qualname, "tests": [f"tests/test_seq.py::{test}"]}
    report = HarvestReport.model_validate(run_probe(runner, "A", "harvest", spec))
    assert report.error is None, report.trace
    return report


def replay(runner, variant: str, qualname: str, calls: list[CallSpec]) -> ReplayReport:
    spec = {"module": "lib.seq", "qualname": qualname, "calls": [c.to_probe() for c in calls]}
    return ReplayReport.model_validate(run_probe(runner, variant, "replay", spec))


def shown(values: list[Value], imports: Imports | None = None) -> list[str]:
    return [render(v, imports or Imports()) for v in values]


def test_a_private_helper_is_reached_through_the_public_function_calling_it(lib_runner):
    report = harvest(lib_runner, "_sums", "test_window")
    assert [e.key for e in report.entries] == ["lib.seq:window_sums"]
    assert [shown(r.call.args) for r in report.entries[0].calls] == [["[1, 2, 3, 4]", "2"]]
    assert report.target is not None and report.target.is_generator


def test_a_private_base_class_method_is_reached_through_its_public_subclass(lib_runner):
    report = harvest(lib_runner, "_Base.size", "test_box")
    assert [e.key for e in report.entries] == ["lib.seq:Box.size"]
    assert render(report.entries[0].calls[0].call.receiver, Imports()) == "Box([1, 2])"


def test_callables_are_recorded_by_name_or_lambda_source(lib_runner):
    report = harvest(lib_runner, "apply_all", "test_apply")
    imports = Imports()
    assert [shown(r.call.args[:1], imports)[0] for r in report.entries[0].calls] == [
        "neg",
        "str.upper",
        "(lambda x: ls.take(1, [x]))",
    ]
    assert imports.lines() == ["from operator import neg", "", "import lib.seq as ls"]
    assert report.skipped == {"lambda": 1}


def test_a_receiver_that_cannot_be_re_created_says_what_its_constructor_was_given(lib_runner):
    report = harvest(lib_runner, "Counter.hit", "test_counter_on_a_closure")
    assert report.entries[0].calls == []
    assert report.skipped == {"receiver lib.seq.Counter (its constructor was given lambda)": 1}


def test_iterator_and_range_arguments_are_recorded_without_consuming_them(lib_runner):
    report = harvest(lib_runner, "take", "test_take")
    assert [shown(r.call.args) for r in report.entries[0].calls] == [["2", "iter([7, 8, 9])"], ["1", "range(0, 3)"]]
    assert report.tests_exit_code == 0  # the tests still saw their iterator whole


def test_a_method_call_carries_the_receiver_history_and_what_came_after(lib_runner):
    report = harvest(lib_runner, "Counter.hit", "test_counter")
    first, second = (r.call for r in report.entries[0].calls)
    assert render(second.receiver, Imports()) == "Counter(Clock(), step=2)"
    assert [(s.on, s.name, shown(s.args)) for s in second.steps] == [(None, "hit", ["'a'"]), ("arg:0", "tick", [])]
    assert [(s.name, shown(s.args)) for s in second.then] == [("__getitem__", ["'a'"])]  # len() is a query
    assert first.steps == [] and [s.name for s in first.then] == ["tick", "hit", "__getitem__"]
    poked = harvest(lib_runner, "Counter.hit", "test_private_poke")  # a test calling a private method
    assert poked.entries[0].calls == [] and poked.skipped == {"receiver history": 1}


def test_replay_consumes_returned_iterators_and_reads_state_after_the_call(lib_runner):
    calls = [
        CallSpec(entry="lib.seq:evens"),
        CallSpec(entry="lib.seq:split_parity", args=[Value(t="list", items=[Value(t="int", v=i) for i in (1, 2, 3)])]),
        CallSpec(entry="lib.seq:take", args=[Value(t="int", v=2), Value(t="iter", items=[Value(t="int", v=i) for i in (7, 8, 9)])]),
        CallSpec(entry="lib.seq:Counter.__init__", args=[Value(t="object", module="tests.helpers", qualname="Clock", args=[], kw={})]),
    ]
    evens, parity, took, built = replay(lib_runner, "A", "window_sums", calls).outcomes
    assert evens.listed and evens.prefix == 64 and shown([evens.value])[0].startswith("[0, 2, 4, ")
    assert parity.materialized and shown([parity.value]) == ["[[2], [1, 3]]"]
    assert shown([took.value]) == ["[7, 8]"] and shown([took.state["arg:1"]]) == ["[9]"]
    assert built.value.t == "opaque"
    assert {k: render(v, Imports()) for k, v in built.state.items() if not k.startswith("result.attr:clock")} == {
        "result.attr:step": "1", "result.len": "0", "result.list": "[]",
    }


def test_replay_runs_steps_on_constructor_arguments_and_reports_the_calls_after(lib_runner):
    report = harvest(lib_runner, "Counter.hit", "test_counter")
    second = report.entries[0].calls[1].call
    on_a = replay(lib_runner, "A", "Counter.hit", [second]).outcomes[0]
    on_b = replay(lib_runner, "B", "Counter.hit", [second]).outcomes[0]
    assert (on_a.value.v, on_b.value.v) == (4, 2)
    assert on_a.state["then:0"].v == 4 and on_b.state["then:0"].v == 2
    assert on_a.state["self.len"].v == 1 and shown([on_a.state["self.list"]]) == ["['a']"]
    assert on_a.state["self.attr:clock"].t == "opaque"  # a helper instance: not comparable by value


def test_harvest_records_a_bounded_share_of_each_tests_calls(lib_runner):
    many = harvest(lib_runner, "take", "test_many_calls")
    assert len(many.entries[0].calls) == 40  # MAX_PER_TEST: the rest of the test runs untraced
    unwritable = harvest(lib_runner, "take", "test_unwritable_calls")
    assert unwritable.entries[0].calls == [] and unwritable.skipped == {"builtins.bytearray": 200}  # MAX_TRIES_PER_TEST

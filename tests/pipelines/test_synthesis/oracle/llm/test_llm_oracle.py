"""The LLM oracle end to end: litellm over real HTTP to the scripted server, candidate files run by the probe
in real subprocesses on tiny A/B repos; feedback, retries, timeouts, spend ceiling, record/replay, hybrid."""

from __future__ import annotations

import ast
import difflib

import pytest

from repo2rlenv.llm import Ledger, ModelPrice, Prices, RecordingClient, ReplayClient
from repo2rlenv.pipelines.test_synthesis.oracle.differential import NoOracle
from repo2rlenv.pipelines.test_synthesis.oracle.llm import (
    LLMNoOracle,
    OracleContext,
    Verdict,
    synthesize_llm,
)
from repo2rlenv.pipelines.test_synthesis.oracle.search import OracleSource, synthesize_hybrid

TEST_PATH = "tests/test_r2e_llm.py"
CALC = {
    "calc/__init__.py": "",
    "calc/ops.py": '''
        def shipping_cost(weight):
            """Flat rate by weight band."""
            if weight <= 0:
                raise ValueError("weight must be positive")
            if weight > 10:
                return 15
            return 5


        def apply_twice(func, x):
            return func(func(x))
    ''',
    "tests/test_ops.py": '''
        from calc.ops import apply_twice, shipping_cost


        def test_light():
            assert shipping_cost(1) == 5


        def test_heavy():
            assert shipping_cost(20) == 15


        def test_apply_twice_identity():
            assert apply_twice(lambda v: v, 1) == 1
    ''',
}
SHIPPING_CHANGE = ("if weight > 10:", "if weight >= 10:")
TWICE_CHANGE = ("return func(func(x))", "return func(x)")


def fenced(body: str) -> str:
    return f"Here are the tests.\n\n```python\nfrom calc.ops import shipping_cost, apply_twice\n\n\n{body}```\n"


GOOD = fenced("def test_ten_kilos_ships_at_the_light_rate():\n    assert shipping_cost(10) == 5\n")
FAILS_ON_A = fenced("def test_ten_kilos():\n    assert shipping_cost(10) == 15\n")
PASSES_ON_B = fenced("def test_one_kilo():\n    assert shipping_cost(1) == 5\n")
TWICE_GOOD = fenced("def test_doubles_twice():\n    assert apply_twice(lambda v: v * 2, 3) == 12\n")
# $1 per 1000 prompt tokens: every scripted reply below costs exactly $1.
PRICES = Prices(models={"openai/scripted": ModelPrice(input_per_mtok=1000.0, output_per_mtok=0.0)})


@pytest.fixture
def calc(make_pair, runner_for):
    """``calc(change) -> (context, runner, pair)`` for B = A with one textual change in calc/ops.py."""

    def build(change=SHIPPING_CHANGE, qualname="shipping_cost"):
        pair = make_pair(CALC, "calc/ops.py", *change)
        a_text, b_text = ((root / "calc/ops.py").read_text() for root in pair)
        node = next(n for n in ast.parse(a_text).body if getattr(n, "name", None) == qualname)
        diff = "".join(difflib.unified_diff(a_text.splitlines(True), b_text.splitlines(True),
                                            "a/calc/ops.py", "b/calc/ops.py"))
        context = OracleContext(
            target_file="calc/ops.py", module="calc.ops", qualname=qualname,
            function_source="".join(a_text.splitlines(True)[node.lineno - 1: node.end_lineno]),
            module_source=a_text, diff=diff, test_path=TEST_PATH, example_test_path="tests/test_ops.py",
            example_test=(pair[0] / "tests/test_ops.py").read_text(), max_test_loc=40)
        return context, runner_for(pair), pair

    return build


def test_first_try_success_passes_on_a_and_fails_on_b(scripted_server, scripted, make_llm_client, calc,
                                                      run_test_file):
    scripted_server.push(scripted.reply(GOOD))
    context, runner, (a, b) = calc()

    result = synthesize_llm(client=make_llm_client(scripted_server), runner=runner, context=context)

    assert result.found and result.reason is None and result.n_tests == 1
    assert [x.verdict for x in result.attempts] == [Verdict.ACCEPTED]
    assert result.attempts[0].on_a == {"test_ten_kilos_ships_at_the_light_rate": "passed"}
    assert result.attempts[0].on_b == {"test_ten_kilos_ships_at_the_light_rate": "failed"}
    # The request carried the function, the diff, the test's place and the repo's own import style.
    [request] = scripted_server.requests
    prompt = request.text()
    for expected in ("if weight > 10:", "+    if weight >= 10:", TEST_PATH,
                     "from calc.ops import apply_twice, shipping_cost"):
        assert expected in prompt
    # Independently of the probe: plain pytest agrees.
    assert run_test_file(a, TEST_PATH, result.test_source).returncode == 0
    assert run_test_file(b, TEST_PATH, result.test_source).returncode == 1


def test_failure_on_a_is_repaired_with_feedback(scripted_server, scripted, make_llm_client, calc):
    scripted_server.push(scripted.reply(FAILS_ON_A), scripted.reply(GOOD))
    context, runner, _ = calc()

    result = synthesize_llm(client=make_llm_client(scripted_server), runner=runner, context=context)

    assert result.found and [x.verdict for x in result.attempts] == [Verdict.FAILS_ON_A, Verdict.ACCEPTED]
    feedback = result.attempts[0].feedback
    assert "do not pass on version A" in feedback and "test_ten_kilos: failed" in feedback
    assert "assert 5 == 15" in feedback  # the error tail from the run on A
    first, second = scripted_server.requests
    assert second.messages[:2] == first.messages
    assert second.messages[2] == {"role": "assistant", "content": FAILS_ON_A}
    assert second.messages[3] == {"role": "user", "content": feedback}


def test_non_discriminating_reply_rejected_after_max_attempts(scripted_server, scripted, make_llm_client, calc):
    scripted_server.push(*[scripted.reply(PASSES_ON_B)] * 2)
    context, runner, _ = calc()

    result = synthesize_llm(client=make_llm_client(scripted_server), runner=runner, context=context, max_attempts=2)

    assert not result.found and result.reason == LLMNoOracle.NOT_SEPARATED
    assert [x.verdict for x in result.attempts] == [Verdict.PASSES_ON_B] * 2
    assert "pass on version B" in result.attempts[0].feedback and result.attempts[-1].feedback is None
    assert len(scripted_server.requests) == 2 and len(scripted_server.requests[1].messages) == 4
    assert result.test_source is None and "pass on version B" in result.detail


def test_static_rejections_cost_no_run(scripted_server, scripted, make_llm_client, calc):
    introspecting = fenced("import inspect\n\n\ndef test_src():\n"
                           "    assert 'weight' in inspect.getsource(shipping_cost)\n")
    scripted_server.push(scripted.reply("Sorry, I cannot help."), scripted.reply(introspecting), scripted.reply(GOOD))
    context, runner, _ = calc()

    result = synthesize_llm(client=make_llm_client(scripted_server), runner=runner, context=context)

    assert [x.verdict for x in result.attempts] == [Verdict.NO_CODE, Verdict.LINT, Verdict.ACCEPTED]
    assert "no ```python code block" in result.attempts[0].feedback
    assert "line 8: inspect.getsource" in result.attempts[1].feedback
    assert len(runner.calls) == 2  # only the accepted file ran (on A and on B)


def test_429_then_success(scripted_server, scripted, make_llm_client, calc):
    scripted_server.push(scripted.error(429, retry_after="1"), scripted.reply(GOOD))
    context, runner, _ = calc()
    client = make_llm_client(scripted_server)

    result = synthesize_llm(client=client, runner=runner, context=context)

    assert result.found and len(result.attempts) == 1
    assert make_llm_client.sleeps == [1.0]
    assert [(e.ok, e.status_code) for e in client.ledger.entries] == [(False, 429), (True, None)]


def test_timeout_ends_synthesis_with_a_reason(scripted_server, scripted, make_llm_client, calc):
    scripted_server.push(scripted.stall(30), scripted.stall(30))
    context, runner, _ = calc()
    client = make_llm_client(scripted_server, timeout_sec=0.5, max_retries=1)

    result = synthesize_llm(client=client, runner=runner, context=context)

    assert not result.found and result.reason == LLMNoOracle.LLM_FAILED and "did not answer within 0.5 s" in result.detail
    assert result.attempts == [] and runner.calls == []
    assert len(scripted_server.requests) == 2


def test_spend_ceiling_mid_run_stops_cleanly(scripted_server, scripted, make_llm_client, calc):
    scripted_server.push(scripted.reply(FAILS_ON_A, prompt_tokens=1000), scripted.reply(GOOD, prompt_tokens=1000))
    context, runner, _ = calc()
    client = make_llm_client(scripted_server, prices=PRICES, max_spend_usd=1.0)

    result = synthesize_llm(client=client, runner=runner, context=context)

    assert not result.found and result.reason == LLMNoOracle.SPEND_LIMIT and result.spend_limited
    assert [x.verdict for x in result.attempts] == [Verdict.FAILS_ON_A] and result.cost_usd == pytest.approx(1.0)
    assert len(scripted_server.requests) == 1  # the repair request was never sent
    again = synthesize_llm(client=client, runner=runner, context=context)  # the next candidate
    assert again.spend_limited and again.attempts == [] and len(scripted_server.requests) == 1


def test_missing_usage_is_flagged_and_ledger_adds_up(scripted_server, scripted, make_llm_client, calc):
    scripted_server.push(scripted.reply(PASSES_ON_B, prompt_tokens=700, completion_tokens=30),
                         scripted.reply(GOOD, usage=False))
    context, runner, _ = calc()
    client = make_llm_client(scripted_server)

    result = synthesize_llm(client=client, runner=runner, context=context)

    assert result.found and [x.tokens_estimated for x in result.attempts] == [False, True]
    totals = client.ledger.totals(role="oracle")
    assert (totals.ok, totals.estimated, totals.unpriced) == (2, 1, 2)
    assert totals.prompt_tokens == result.prompt_tokens > 700
    assert totals.completion_tokens == result.completion_tokens
    assert result.cost_usd is None  # no price given: no cost invented
    assert Ledger.read(client.ledger.path) == client.ledger.entries


def test_record_then_replay_gives_identical_results(scripted_server, scripted, make_llm_client, calc, tmp_path):
    scripted_server.push(scripted.reply(FAILS_ON_A), scripted.reply(GOOD))
    context, runner, _ = calc()
    cassette = tmp_path / "oracle.cassette.jsonl"
    recorded = synthesize_llm(client=RecordingClient(make_llm_client(scripted_server), cassette), runner=runner,
                              context=context)
    scripted_server.stop()

    replayed = synthesize_llm(client=ReplayClient(cassette), runner=runner, context=context)

    no_cost = {"attempts": {"__all__": {"cost_usd"}}}
    assert recorded.found and len(recorded.attempts) == 2
    assert replayed.model_dump(exclude=no_cost) == recorded.model_dump(exclude=no_cost)


def test_hybrid_prefers_the_differential_oracle(scripted_server, make_llm_client, calc):
    context, runner, _ = calc()

    result = synthesize_hybrid(client=make_llm_client(scripted_server), runner=runner, context=context,
                               covering_tests=["tests/test_ops.py::test_light", "tests/test_ops.py::test_heavy"])

    assert result.found and result.kind is OracleSource.DIFFERENTIAL and result.llm is None
    assert result.attempts == 0 and result.synthesis_llm is None
    assert scripted_server.requests == []  # no model call when the differential oracle suffices


def test_hybrid_falls_back_to_the_llm(scripted_server, scripted, make_llm_client, calc):
    scripted_server.push(scripted.reply(TWICE_GOOD))
    context, runner, _ = calc(TWICE_CHANGE, "apply_twice")
    covering = ["tests/test_ops.py::test_apply_twice_identity"]

    alone = synthesize_hybrid(client=None, runner=runner, context=context, covering_tests=covering)
    result = synthesize_hybrid(client=make_llm_client(scripted_server), runner=runner, context=context,
                               covering_tests=covering)

    assert not alone.found and alone.reason == NoOracle.NO_DISTINGUISHING_INPUT  # a lambda cannot be replayed
    assert result.found and result.kind is OracleSource.LLM and result.attempts == 1
    assert result.synthesis_llm == "openai/scripted" and "apply_twice(lambda v: v * 2, 3)" in result.test_source


def test_an_endpoint_that_dies_mid_run_stops_the_run_instead_of_failing_each_candidate(scripted_server, scripted,
                                                                                       make_llm_client, calc):
    from repo2rlenv.llm import CircuitBreaker, ModelUnavailable

    scripted_server.push(*[scripted.error(503)] * 4)
    context, runner, _ = calc()
    client = make_llm_client(scripted_server, max_retries=1, breaker=CircuitBreaker(limit=2))
    first = synthesize_llm(client=client, runner=runner, context=context)  # one candidate's call fails: it is dropped
    assert not first.found and first.reason == LLMNoOracle.LLM_FAILED
    with pytest.raises(ModelUnavailable, match="2 model calls in a row failed; the last: openai/scripted: HTTP 503"):
        synthesize_llm(client=client, runner=runner, context=context)  # the next one's too: the run stops

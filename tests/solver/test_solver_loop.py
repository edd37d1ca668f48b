"""The repair loop end to end: litellm over HTTP to a scripted server, tests run for real in a local venv.

One test per way a solve ends or recovers (the issue's list): first-try pass, import-error repair, a
timeout (the tests' and the model's), round exhaustion, no progress, `VERDICT: CODE_BUG`, an edit that
matches twice, the spend ceiling and the token budget.
"""

from __future__ import annotations

import json

from repo2rlenv.solver.events import Trajectory
from repo2rlenv.solver.result import StopReason

PLAN = "1. zero percent keeps the price (line 9)\n2. a negative percent raises (line 7)"


def test_first_try_pass_plans_then_writes_passing_tests_that_add_coverage(scripted, scripted_server, solve_tiny,
                                                                         solver_kit):
    scripted_server.push(scripted.reply(PLAN, prompt_tokens=300, completion_tokens=40),
                         scripted.reply(solver_kit.file_reply(solver_kit.GOOD_TESTS), prompt_tokens=500,
                                        completion_tokens=120))
    result = solve_tiny(scripted_server, routing={"plan": "openai/big", "generate": "openai/small"})

    assert result.stop_reason is StopReason.SOLVED and result.rounds == 1
    assert result.plan == PLAN
    assert solve_tiny.final_text == solver_kit.GOOD_TESTS
    report = result.last_report
    assert report.passed() == [f"{solver_kit.TEST_PATH}::test_negative_percent_is_refused",
                               f"{solver_kit.TEST_PATH}::test_quarter_off",
                               f"{solver_kit.TEST_PATH}::test_zero_percent_keeps_the_price"]
    assert report.baseline_covered == [6, 8, 10] and report.targets() == solver_kit.UNCOVERED
    assert report.new_coverage() == solver_kit.UNCOVERED
    # Routing: the plan went to the large model, the file to the small one.
    assert [r.body["model"] for r in scripted_server.requests] == ["big", "small"]
    plan_request, generate_request = (r.text() for r in scripted_server.requests)
    assert "Before writing any test, make a plan" in plan_request
    assert "    if percent == 0:" in plan_request and " 9 |         return price" in plan_request
    assert PLAN in generate_request and "from tinyshop.prices import discounted" in generate_request
    # Ledger: one entry per call, tokens from the API's usage, under the solver's roles.
    entries = solve_tiny.ledger.entries
    assert [(e.role, e.model, e.prompt_tokens, e.completion_tokens) for e in entries] == [
        ("solver.plan", "openai/big", 300, 40), ("solver.generate", "openai/small", 500, 120)]
    assert (result.calls, result.prompt_tokens, result.completion_tokens) == (2, 800, 160)
    # Hooks, in order.
    kinds = [(k, v if k != "round_end" else v.outcome) for k, v in solve_tiny.events]
    assert kinds == [("tool_call", "read_context"), ("tool_result", "read_context"),
                     ("tool_call", "run_existing_tests"), ("tool_result", "run_existing_tests"),
                     ("stream", "plan"), ("stream", "generate"), ("tool_call", "write_file"),
                     ("tool_result", "write_file"), ("tool_call", "run_tests"), ("tool_result", "run_tests"),
                     ("round_end", "tests"), ("finish", "solved")]


def test_trajectory_replays_exactly_the_requests_the_model_saw(scripted, scripted_server, solve_tiny, solver_kit):
    scripted_server.push(scripted.reply(PLAN), scripted.reply(solver_kit.file_reply(solver_kit.WRONG_TESTS)),
                         scripted.reply(solver_kit.file_reply(solver_kit.GOOD_TESTS)))
    result = solve_tiny(scripted_server)
    assert result.stop_reason is StopReason.SOLVED and result.rounds == 2

    events = Trajectory.read(solve_tiny.trajectory_path)
    lines = [json.loads(line) for line in solve_tiny.trajectory_path.read_text().splitlines()]
    assert len(lines) == len(events) and [e.seq for e in events] == list(range(len(events)))
    by_seq = {e.seq: e for e in events}
    answers = [e for e in events if e.kind == "message" and e.role == "assistant"]
    assert [a.call_role for a in answers] == ["plan", "generate", "repair"]
    for answer, sent in zip(answers, scripted_server.requests, strict=True):
        rebuilt = [{"role": by_seq[s].role, "content": by_seq[s].content} for s in answer.request]
        assert rebuilt == sent.messages
        assert answer.model == solver_kit.MODEL and answer.prompt_tokens == 100
    tests = [e for e in events if e.kind == "tool_result" and e.tool == "run_tests"]
    assert [t.data["failing"] for t in tests] == [[f"{solver_kit.TEST_PATH}::test_half_price_again"], []]
    assert events[-1].kind == "stop" and events[-1].data["stop_reason"] == "solved"


def test_import_error_is_fed_back_and_repaired_with_an_edit(scripted, scripted_server, solve_tiny, solver_kit):
    broken = solver_kit.GOOD_TESTS.replace("from tinyshop.prices import discounted",
                                           "from tinyshop.prices import discount")
    scripted_server.push(scripted.reply(PLAN), scripted.reply(solver_kit.file_reply(broken)),
                         scripted.reply(solver_kit.edit_reply("from tinyshop.prices import discount\n",
                                                              "from tinyshop.prices import discounted\n")))
    result = solve_tiny(scripted_server)

    assert result.stop_reason is StopReason.SOLVED and result.rounds == 2
    feedback = scripted_server.requests[2].messages[-1]["content"]
    assert "cannot import name 'discount'" in feedback
    assert "0 passed, 1 failing" in feedback
    assert solve_tiny.final_text == solver_kit.GOOD_TESTS


def test_a_hanging_test_times_out_and_the_timeout_is_fed_back(scripted, scripted_server, solve_tiny, solver_kit):
    hanging = solver_kit.GOOD_TESTS + "\n\ndef test_waits_forever():\n    while True:\n        pass\n"
    scripted_server.push(scripted.reply(PLAN), scripted.reply(solver_kit.file_reply(hanging)),
                         scripted.reply(solver_kit.file_reply(solver_kit.GOOD_TESTS)))
    result = solve_tiny(scripted_server, test_timeout_sec=4)

    assert result.stop_reason is StopReason.SOLVED and result.rounds == 2
    feedback = scripted_server.requests[2].messages[-1]["content"]
    assert "timed out" in feedback and "did not finish within 4s" in feedback


def test_a_model_call_that_times_out_ends_the_solve_with_a_model_error(scripted, scripted_server, solve_tiny):
    scripted_server.push(scripted.stall(10))
    result = solve_tiny(scripted_server, llm_timeout_sec=1.0)

    assert result.stop_reason is StopReason.MODEL_ERROR and "did not answer within 1 s" in result.detail
    assert result.rounds == 0 and result.calls == 0 and result.files == {}
    assert [e.ok for e in solve_tiny.ledger.entries] == [False]


def test_rounds_run_out_when_each_round_fails_differently(scripted, scripted_server, solve_tiny, solver_kit):
    other = solver_kit.WRONG_TESTS.replace("test_half_price_again", "test_half_price_once_more")
    scripted_server.push(scripted.reply(PLAN), scripted.reply(solver_kit.file_reply(solver_kit.WRONG_TESTS)),
                         scripted.reply(solver_kit.file_reply(other)))
    result = solve_tiny(scripted_server, max_rounds=2)

    assert result.stop_reason is StopReason.ROUND_LIMIT and result.rounds == 2
    assert len(scripted_server.requests) == 3 and scripted_server.unscripted == 0
    assert result.last_report.failing() == [f"{solver_kit.TEST_PATH}::test_half_price_once_more"]


def test_the_same_failing_set_two_rounds_running_stops_for_no_progress(scripted, scripted_server, solve_tiny,
                                                                        solver_kit):
    scripted_server.push(scripted.reply(PLAN), scripted.reply(solver_kit.file_reply(solver_kit.WRONG_TESTS)),
                         scripted.reply(solver_kit.edit_reply("def test_half_price_again():\n",
                                                              "def test_half_price_again():  # checked\n")))
    result = solve_tiny(scripted_server, max_rounds=5)

    assert result.stop_reason is StopReason.NO_PROGRESS and result.rounds == 2
    assert "1 failing test(s) two rounds running" in result.detail
    assert len(scripted_server.requests) == 3


def test_verdict_code_bug_stops_without_weakening_the_test(scripted, scripted_server, solve_tiny, solver_kit):
    verdict = ("The test is right: half of 10.0 after the discount should be 6.0 by the spec.\n\n"
               "VERDICT: CODE_BUG discounted() rounds away the surcharge\n")
    scripted_server.push(scripted.reply(PLAN), scripted.reply(solver_kit.file_reply(solver_kit.WRONG_TESTS)),
                         scripted.reply(verdict))
    result = solve_tiny(scripted_server)

    assert result.stop_reason is StopReason.CODE_BUG and result.rounds == 2
    assert result.verdict == "discounted() rounds away the surcharge"
    assert solve_tiny.final_text == solver_kit.WRONG_TESTS  # the assertion was kept as written
    assert len(scripted_server.requests) == 3


def test_an_edit_that_matches_twice_is_refused_with_both_places_shown(scripted, scripted_server, solve_tiny,
                                                                      solver_kit):
    twice = ("from tinyshop.prices import discounted\n\n\ndef test_a():\n    assert discounted(10.0, 50) == 6.0\n"
             "\n\ndef test_b():\n    assert discounted(10.0, 50) == 6.0\n")
    scripted_server.push(
        scripted.reply(PLAN), scripted.reply(solver_kit.file_reply(twice)),
        scripted.reply(solver_kit.edit_reply("    assert discounted(10.0, 50) == 6.0\n",
                                             "    assert discounted(10.0, 50) == 5.0\n")),
        scripted.reply(solver_kit.file_reply(solver_kit.GOOD_TESTS)))
    result = solve_tiny(scripted_server)

    assert result.stop_reason is StopReason.SOLVED and result.rounds == 3
    refusal = scripted_server.requests[3].messages[-1]["content"]
    assert "Your edits were not applied" in refusal and "occurs 2 times" in refusal
    assert "occurrence at line 5:" in refusal and "occurrence at line 9:" in refusal
    assert "5 |     assert discounted(10.0, 50) == 6.0" in refusal
    round_ends = [v.outcome for k, v in solve_tiny.events if k == "round_end"]
    assert round_ends == ["tests", "edit_error", "tests"]


def test_the_spend_ceiling_is_checked_before_every_call(scripted, scripted_server, solve_tiny, solver_kit):
    scripted_server.push(scripted.reply(PLAN), scripted.reply(solver_kit.file_reply(solver_kit.GOOD_TESTS)))
    # 150 tokens at $1000 per million = $0.15, past the $0.10 ceiling after the first call.
    price = {"input_per_mtok": 1000.0, "output_per_mtok": 1000.0}
    result = solve_tiny(scripted_server, max_spend_usd=0.10, prices={solver_kit.MODEL: price})

    assert result.stop_reason is StopReason.SPEND_LIMIT and "of the $0.1000 ceiling" in result.detail
    assert len(scripted_server.requests) == 1  # the generate call was never sent
    assert result.cost_usd == 0.15 and result.files == {}


def test_the_token_budget_stops_before_the_call_that_would_pass_it(scripted, scripted_server, solve_tiny, solver_kit):
    scripted_server.push(scripted.reply(PLAN), scripted.reply(solver_kit.file_reply(solver_kit.WRONG_TESTS)),
                         scripted.reply(solver_kit.file_reply(solver_kit.GOOD_TESTS)))
    result = solve_tiny(scripted_server, token_budget=250)  # each scripted reply reports 150 tokens

    assert result.stop_reason is StopReason.TOKEN_BUDGET and result.rounds == 1
    assert len(scripted_server.requests) == 2 and result.tokens == 300


def test_a_file_the_verifier_would_refuse_is_fed_back_without_running_it(scripted, scripted_server, solve_tiny,
                                                                        solver_kit):
    pinning = ("import inspect\n\nfrom tinyshop import prices\n\n\ndef test_source():\n"
               "    assert 'percent == 0' in inspect.getsource(prices.discounted)\n")
    scripted_server.push(scripted.reply(PLAN), scripted.reply(solver_kit.file_reply(pinning)),
                         scripted.reply(solver_kit.file_reply(solver_kit.GOOD_TESTS)))
    result = solve_tiny(scripted_server)

    assert result.stop_reason is StopReason.SOLVED and result.rounds == 2
    refusal = scripted_server.requests[2].messages[-1]["content"]
    assert "was not run" in refusal and "source-introspection" in refusal and "line 7" in refusal
    tools = [v for k, v in solve_tiny.events if k == "tool_call"]
    assert tools.count("run_tests") == 1  # only the second file ran


def test_with_a_stream_hook_replies_arrive_piece_by_piece_before_the_whole(scripted, scripted_server, solve_tiny,
                                                                          solver_kit):
    reply = solver_kit.file_reply(solver_kit.GOOD_TESTS)
    scripted_server.push(scripted.reply(reply))
    result = solve_tiny(scripted_server, stream=True, plan=False)

    assert result.stop_reason is StopReason.SOLVED and scripted_server.streamed == 1
    pieces = [piece for kind, value in solve_tiny.events if kind == "piece" for role, piece in [value]]
    assert len(pieces) > 1 and "".join(pieces) == reply
    kinds = [kind for kind, _ in solve_tiny.events]
    assert kinds.index("stream") > max(i for i, k in enumerate(kinds) if k == "piece")  # the whole comes last

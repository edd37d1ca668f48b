"""The harness's bookkeeping without Docker: the spend ceiling across tasks, resuming with a higher ceiling,
refusing to resume with other settings, errored tasks, totals and both reports.

`solve_task` is replaced by a stand-in that records one priced call per task; the Docker tests in
test_eval_harness.py run the real one.
"""

from __future__ import annotations

import json

import pytest

from repo2rlenv.errors import SandboxError
from repo2rlenv.eval import harness
from repo2rlenv.eval.results import TaskStatus
from repo2rlenv.llm.ledger import LedgerEntry
from repo2rlenv.solver.config import SolverConfig
from repo2rlenv.solver.errors import SolverInputError
from repo2rlenv.solver.result import SolveResult, StopReason
from repo2rlenv.solver.target import Target
from repo2rlenv.solver.task_mode import TaskSolve
from repo2rlenv.validate import RunOutcome

MODEL = "openai/stand-in"
PRICES = {MODEL: {"input_per_mtok": 0.0, "output_per_mtok": 1000.0}}  # 300 completion tokens = $0.30
REWARDS = {"t1": 1.0, "t2": 0.25}


@pytest.fixture
def dataset(tmp_path):
    for task_id in ("t1", "t2", "t3", "t4"):
        (tmp_path / "data" / "tasks" / task_id).mkdir(parents=True)
    return tmp_path / "data"


@pytest.fixture
def ran(monkeypatch):
    """Task ids the stand-in solved, in order."""
    calls: list[str] = []

    def stand_in(task, config, clients, ledger, *, docker, hooks=None, trajectory=None, spent_before_usd=0.0):
        task_id = task.root.name
        calls.append(task_id)
        if task_id == "t4":
            raise SandboxError("building t4's environment failed: no space left")
        ledger.record(LedgerEntry(role="solver.generate", model=MODEL, attempt=1, ok=True, prompt_tokens=10,
                                  completion_tokens=300, latency_sec=0.1, cost_usd=0.3, request_key="k"))
        target = Target(path="p.py", qualname="f", module="p", test_path=f"tests/test_{task_id}.py", import_roots=[""])
        solve = SolveResult(target=target, stop_reason=StopReason.SOLVED, rounds=1, calls=1, prompt_tokens=10,
                            completion_tokens=300, cost_usd=0.3, files={target.test_path: f"def test_{task_id}():\n    pass\n"})
        reward = REWARDS.get(task_id, 1.0)
        details = {"b_pass": 1.0, "b_fail": reward, "cov": 0.5, "n_cases": 1,
                   "coverage": {"targets": [3, 4]}, "reason": None}
        return TaskSolve(task_id=task_id, solve=solve, grade=RunOutcome(reward=reward, details=details))

    monkeypatch.setattr(harness, "solve_task", stand_in)
    return calls


def _config(**extra):
    return SolverConfig(model=MODEL, prices=PRICES, **extra)


def test_the_ceiling_stops_the_eval_and_a_higher_one_resumes_it(dataset, ran, tmp_path):
    out = tmp_path / "eval"
    first = harness.run_eval(dataset, out, _config(max_spend_usd=0.5), docker=None, only=["t1", "t2", "t3"])
    assert ran == ["t1", "t2"]  # $0.30 spent after t1 is under $0.50; $0.60 after t2 is not
    assert first.not_run == ["t3"] and [r.task_id for r in first.tasks] == ["t1", "t2"]
    assert "Not run (spend ceiling reached): t3" in (out / "results.md").read_text()
    assert 'id="not-run"' in (out / "report.html").read_text()

    second = harness.run_eval(dataset, out, _config(max_spend_usd=1.0, base_url="http://elsewhere/v1"),
                              docker=None, only=["t1", "t2", "t3"])
    assert ran == ["t1", "t2", "t3"] and second.not_run == []
    t = second.totals
    assert (t.tasks, t.solved, t.solve_rate, t.mean_reward) == (3, 2, 2 / 3, pytest.approx(2.25 / 3))
    assert (t.mean_coverage_gain, t.coverage_tasks, t.calls, t.cost_usd) == (0.5, 3, 3, pytest.approx(0.9))
    saved = json.loads((out / "results.json").read_text())
    assert saved["totals"]["solved"] == 2 and saved["settings"]["solver"]["max_spend_usd"] == 1.0
    assert (out / "tests" / "t3" / "test_t3.py").read_text() == "def test_t3():\n    pass\n"


def test_resuming_with_another_model_is_refused(dataset, ran, tmp_path):
    out = tmp_path / "eval"
    harness.run_eval(dataset, out, _config(), docker=None, only=["t1"])
    with pytest.raises(SolverInputError, match=r"other settings \(model\); pass --restart"):
        harness.run_eval(dataset, out, SolverConfig(model="openai/other"), docker=None, only=["t1"])
    harness.run_eval(dataset, out, SolverConfig(model="openai/other"), docker=None, only=["t1"], restart=True)
    assert ran == ["t1", "t1"]


def test_a_task_that_cannot_run_is_recorded_and_counts_zero(dataset, ran, tmp_path):
    out = tmp_path / "eval"
    results = harness.run_eval(dataset, out, _config(), docker=None, only=["t1", "t4"])
    rows = {r.task_id: r for r in results.tasks}
    assert rows["t4"].status is TaskStatus.ERROR and "no space left" in rows["t4"].error
    assert (results.totals.errors, results.totals.mean_reward, results.totals.solve_rate) == (1, 0.5, 0.5)
    assert results.totals.stop_reasons == {"error": 1, "solved": 1}
    assert "| t4 | error: building t4's environment failed: no space left |" in (out / "results.md").read_text()


def test_unknown_tasks_are_refused(dataset, ran, tmp_path):
    with pytest.raises(SolverInputError, match="no such task in .*: nope"):
        harness.run_eval(dataset, tmp_path / "eval", _config(), docker=None, only=["nope"])


@pytest.fixture
def flaky_model(monkeypatch):
    """A stand-in whose model is down for the task ids in `down` (the solve stops on a model error) and
    whose endpoint vanishes for good for the ids in `gone` (the client's circuit breaker trips)."""
    state = {"down": set(), "gone": set(), "ran": [], "stop": StopReason.MODEL_ERROR}

    def stand_in(task, config, clients, ledger, *, docker, hooks=None, trajectory=None, spent_before_usd=0.0):
        from repo2rlenv.llm import ModelUnavailable

        task_id = task.root.name
        state["ran"].append(task_id)
        if task_id in state["gone"]:
            raise ModelUnavailable("3 model calls in a row failed; the last: openai/stand-in: cannot be reached")
        target = Target(path="p.py", qualname="f", module="p", test_path=f"tests/test_{task_id}.py", import_roots=[""])
        if task_id in state["down"]:
            solve = SolveResult(target=target, stop_reason=state["stop"], rounds=0,
                                detail="openai/stand-in: cannot be reached (connection refused) (after 3 attempts)")
            return TaskSolve(task_id=task_id, solve=solve,
                             grade=RunOutcome(reward=0.0, details={"reason": "missing submission"}))
        solve = SolveResult(target=target, stop_reason=StopReason.SOLVED, rounds=1,
                            files={target.test_path: "def test_x():\n    pass\n"})
        return TaskSolve(task_id=task_id, solve=solve,
                         grade=RunOutcome(reward=1.0, details={"b_pass": 1.0, "b_fail": 1.0, "cov": 1.0}))

    monkeypatch.setattr(harness, "solve_task", stand_in)
    return state


def test_model_errors_are_unfinished_not_verdicts_and_a_rerun_retries_only_them(dataset, flaky_model, tmp_path):
    out = tmp_path / "eval"
    stop = StopReason.MODEL_ERROR
    flaky_model["down"] = {"t1", "t2"}
    first = harness.run_eval(dataset, out, _config(), docker=None, only=["t1", "t2", "t3"])
    rows = {r.task_id: r for r in first.tasks}
    assert rows["t1"].status is TaskStatus.UNFINISHED and rows["t3"].status is TaskStatus.GRADED
    t = first.totals
    # The solve rate is over the one finished task; the two unfinished ones are counted apart.
    assert (t.tasks, t.unfinished, t.solved, t.solve_rate, t.mean_reward) == (3, 2, 1, 1.0, 1.0)
    assert t.stop_reasons == {"solved": 1, f"unfinished: {stop.value}": 2}
    assert "unfinished" in (out / "results.md").read_text() and "unfinished" in (out / "report.html").read_text()

    flaky_model["down"] = set()
    second = harness.run_eval(dataset, out, _config(), docker=None, only=["t1", "t2", "t3"])
    assert flaky_model["ran"] == ["t1", "t2", "t3", "t1", "t2"]  # t3 had a verdict: not run again
    assert (second.totals.unfinished, second.totals.solved, second.totals.solve_rate) == (0, 3, 1.0)


def test_while_no_task_has_a_verdict_a_rerun_may_change_the_model(dataset, flaky_model, tmp_path):
    out = tmp_path / "eval"
    flaky_model["down"] = {"t1"}
    harness.run_eval(dataset, out, _config(), docker=None, only=["t1"])
    flaky_model["down"] = set()
    fixed = harness.run_eval(dataset, out, SolverConfig(model="openai/other"), docker=None, only=["t1"])
    assert fixed.totals.solved == 1 and fixed.settings.solver["model"] == "openai/other"
    with pytest.raises(SolverInputError, match=r"other settings \(model\)"):  # now t1 has a verdict
        harness.run_eval(dataset, out, _config(), docker=None, only=["t1"])


def test_a_vanished_endpoint_stops_the_eval_with_its_cause_and_the_results_written(dataset, flaky_model, tmp_path):
    from repo2rlenv.llm import ModelUnavailable

    out = tmp_path / "eval"
    flaky_model["gone"] = {"t2"}
    with pytest.raises(ModelUnavailable, match="in a row failed"):
        harness.run_eval(dataset, out, _config(), docker=None, only=["t1", "t2", "t3"])
    saved = json.loads((out / "results.json").read_text())
    assert saved["not_run"] == ["t3"] and "cannot be reached" in saved["stopped"]
    assert [(r["task_id"], r["status"]) for r in saved["tasks"]] == [("t1", "graded"), ("t2", "unfinished")]
    flaky_model["gone"] = set()
    resumed = harness.run_eval(dataset, out, _config(), docker=None, only=["t1", "t2", "t3"])
    assert flaky_model["ran"] == ["t1", "t2", "t2", "t3"] and resumed.totals.solved == 3


def test_a_task_the_spend_ceiling_stopped_is_unfinished_and_runs_again_under_a_higher_one(dataset, flaky_model,
                                                                                         tmp_path):
    out = tmp_path / "eval"
    flaky_model["down"], flaky_model["stop"] = {"t1"}, StopReason.SPEND_LIMIT
    first = harness.run_eval(dataset, out, _config(max_spend_usd=1.0), docker=None, only=["t1", "t2"])
    assert first.tasks[0].status is TaskStatus.UNFINISHED and first.not_run == ["t2"]
    assert (first.totals.unfinished, first.totals.solve_rate) == (1, None)  # no verdict: no rate
    flaky_model["down"] = set()
    second = harness.run_eval(dataset, out, _config(max_spend_usd=2.0), docker=None, only=["t1", "t2"])
    assert flaky_model["ran"] == ["t1", "t1", "t2"] and second.totals.solved == 2


def test_the_progress_line_of_an_unfinished_task_says_why_and_unpriced_calls_are_not_free(dataset, flaky_model,
                                                                                         tmp_path):
    from repo2rlenv.eval.formatting import usd

    flaky_model["down"] = {"t1"}
    lines: list[str] = []
    harness.run_eval(dataset, tmp_path / "eval", _config(), docker=None, only=["t1"], progress=lines.append)
    assert "t1: unfinished (model_error): openai/stand-in: cannot be reached (connection refused)" in lines[-1]
    assert (usd(0.0, 3), usd(0.0), usd(0.5, 1)) == ("unpriced (3 calls)", "$0.0000", "$0.5000 (+1 unpriced)")


def test_tries_solve_each_task_again_and_measure_its_difficulty(dataset, ran, tmp_path, task_toml_text):
    out = tmp_path / "eval"
    (dataset / "tasks" / "t1" / "task.toml").write_text(task_toml_text("t1", difficulty="hard"))
    results = harness.run_eval(dataset, out, _config(), docker=None, only=["t1", "t2"], tries=3)
    assert ran == ["t1", "t2"] * 3  # each round over every task, so a stopped eval has spread its tries
    assert [r.run_id for r in results.tasks] == ["t1", "t2", "t1@2", "t2@2", "t1@3", "t2@3"]
    assert {d.task_id: (d.tries, d.solved, d.measured_label, d.predicted_label) for d in results.difficulty} == {
        "t1": (3, 3, "easy", "hard"), "t2": (3, 0, "hard", None)}
    assert (out / "tests" / "t2@3" / "test_t2.py").is_file() and (out / "ledgers" / "t1@2.jsonl").is_file()
    md = (out / "results.md").read_text()
    assert "Difficulty over 3 tries per task" in md and "| t1 | 3/3 | easy | hard |" in md
    # Raising --tries on a finished eval runs only the new tries.
    again = harness.run_eval(dataset, out, _config(), docker=None, only=["t1", "t2"], tries=4)
    assert ran[6:] == ["t1", "t2"] and len(again.tasks) == 8 and again.settings.tries == 4


def test_measured_labels_follow_the_solve_rate():
    from repo2rlenv.eval.results import RewardBreakdown, TaskRecord, difficulty

    def rec(task: str, attempt: int, reward: float | None, status: TaskStatus = TaskStatus.GRADED) -> TaskRecord:
        return TaskRecord(task_id=task, attempt=attempt, status=status, grade=RewardBreakdown(reward=reward),
                          stop_reason="model_error" if status is TaskStatus.UNFINISHED else "solved")

    got = difficulty([rec("a", 1, 1.0), rec("a", 2, 1.0), rec("a", 3, 0.4), rec("b", 1, 0.4), rec("b", 2, 1.0),
                      rec("c", 1, 0.0), rec("d", 1, None, TaskStatus.UNFINISHED)], {})
    assert [(d.task_id, d.tries, d.measured_label) for d in got] == [
        ("a", 3, "easy"), ("b", 2, "medium"), ("c", 1, "hard"), ("d", 0, None)]

"""Solver sessions: the three stores keep a state whole, and a solve killed (SIGKILL) after its first round
continues from that round in a new process — no plan or first file asked again, the files put back, the
trajectory numbered on — and a finished session returns its result without a call."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from repo2rlenv.solver.sessions import JsonStore, MemoryStore, SavedMessage, SessionState, SqlStore
from repo2rlenv.solver.target import Target

TARGET = Target(path="tinyshop/prices.py", qualname="discounted", module="tinyshop.prices",
                test_path="tests/test_r2e_tiny.py", import_roots=[""])


@pytest.mark.parametrize("make", [lambda tmp: MemoryStore(), lambda tmp: JsonStore(tmp / "sessions"),
                                  lambda tmp: SqlStore(f"sqlite:///{tmp / 'sessions.db'}")],
                         ids=["memory", "json", "sqlite"])
def test_a_store_keeps_a_state_whole(tmp_path, make):
    store = make(tmp_path)
    state = SessionState(session_id="s-1", target=TARGET, round=2, plan="a plan",
                         head=[SavedMessage(seq=0, role="system", content="sys")],
                         pairs=[[SavedMessage(seq=3, role="assistant", content="<b>x</b>"),
                                 SavedMessage(seq=4, role="user", content="feedback ✓")]],
                         files={"tests/test_r2e_tiny.py": "def test_a():\n    assert 1\n"},
                         previous=[["t::a"], [7, 9]])
    assert store.load("s-1") is None
    store.save(state)
    assert store.load("s-1") == state
    store.save(state.model_copy(update={"round": 3}))
    assert store.load("s-1").round == 3
    store.delete("s-1")
    assert store.load("s-1") is None


def test_a_json_store_refuses_ids_that_are_paths(tmp_path):
    with pytest.raises(ValueError):
        JsonStore(tmp_path).save(SessionState(session_id="../x", target=TARGET, round=0))


EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "solver" / "session.py"
TEST_PATH = "tests/test_r2e_prices_discounted.py"


def test_a_killed_solve_continues_from_its_last_completed_round(tmp_path, monkeypatch, scripted, scripted_server,
                                                               solver_kit, tiny_sandbox, r2e_cache):
    # The documented example (examples/solver/session.py) is the process that is killed and rerun.
    monkeypatch.setenv("REPO2RLENV_CACHE", str(r2e_cache))
    repo = tmp_path / "tinyshop"
    for rel, text in solver_kit.TINY_FILES.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    out = tmp_path / "out"
    calls: list[str] = []
    first_life = {"on": True}

    def respond(request):
        body = request.text()
        # The first file's request is the system message and one user message; a repair's carries the
        # earlier rounds' replies and feedback too.
        messages = request.messages
        kind = "plan" if "make a plan" in body else "generate" if len(messages) == 2 else "repair"
        calls.append(kind)
        if kind == "plan":
            return scripted.reply("1. Check the branches.")
        if kind == "generate":
            return scripted.reply(solver_kit.file_reply(solver_kit.WRONG_TESTS, TEST_PATH))
        if first_life["on"]:
            return scripted.stall(120)  # the first process dies waiting here, after round 1 was saved
        return scripted.reply(solver_kit.file_reply(solver_kit.GOOD_TESTS, TEST_PATH))

    scripted_server.responder = respond
    argv = [sys.executable, str(EXAMPLE), "--repo", str(repo), "--target", "tinyshop/prices.py::discounted",
            "--llm", solver_kit.MODEL, "--llm-base-url", scripted_server.base_url, "--api-key-env", "R2E_TEST_LLM_KEY",
            "--out", str(out), "--session", "tiny-1", "--max-rounds", "3"]
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    state_file = out / "sessions" / "tiny-1.json"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if state_file.is_file() and json.loads(state_file.read_text())["round"] == 1 and calls[-1:] == ["repair"]:
            break
        assert child.poll() is None, child.communicate()[1].decode()[-3000:]
        time.sleep(0.2)
    else:
        pytest.fail("round 1 was never saved")
    os.killpg(child.pid, signal.SIGKILL)
    child.wait(timeout=30)
    saved = json.loads(state_file.read_text())
    assert saved["result"] is None and saved["files"] == {TEST_PATH: solver_kit.WRONG_TESTS}
    seqs_before = [json.loads(line)["seq"] for line in (out / "trajectory.jsonl").read_text().splitlines()]

    first_life["on"] = False
    calls.clear()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads((out / "result.json").read_text())
    assert result["stop_reason"] == "solved" and result["rounds"] == 2
    assert calls == ["repair"]  # no plan, no first file: round 2 straight away
    events = [json.loads(line) for line in (out / "trajectory.jsonl").read_text().splitlines()]
    seqs = [e["seq"] for e in events]
    assert seqs == list(range(len(seqs))) and len(seqs) > len(seqs_before)
    assert any(e.get("tool") == "resume_session" and e["data"]["round"] == 1 for e in events)
    # The repair request carried round 1's reply and its feedback, restored from the store.
    assert json.loads(state_file.read_text())["result"]["stop_reason"] == "solved"

    calls.clear()
    again = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-3000:]
    assert calls == [] and json.loads((out / "result.json").read_text())["rounds"] == 2
    assert "result: solved, rounds 2" in again.stdout

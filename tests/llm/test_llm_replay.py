"""Record replies to a cassette over real HTTP, then replay them with the server stopped."""

from __future__ import annotations

import subprocess
import sys

import pytest

from repo2rlenv.llm import CallSource, CassetteMiss, Ledger, RecordingClient, ReplayClient

ASK = [{"role": "user", "content": "first"}]
AGAIN = [{"role": "user", "content": "first"}, {"role": "assistant", "content": "one"},
         {"role": "user", "content": "again"}]


def test_record_then_replay_without_server(scripted_server, scripted, make_llm_client, tmp_path):
    scripted_server.push(scripted.reply("one", prompt_tokens=10, completion_tokens=1),
                         scripted.reply("two", usage=False), scripted.reply("three", prompt_tokens=10))
    cassette = tmp_path / "cassette.jsonl"
    recorder = RecordingClient(make_llm_client(scripted_server), cassette)
    recorded = [recorder.complete(ASK, role="oracle"), recorder.complete(AGAIN, role="oracle"),
                recorder.complete(ASK, role="oracle")]
    scripted_server.stop()

    ledger = Ledger()
    replay = ReplayClient(cassette, ledger=ledger)
    replayed = [replay.complete(ASK, role="oracle"), replay.complete(AGAIN, role="oracle"),
                replay.complete(ASK, role="oracle")]

    assert replay.model == "openai/scripted"
    # Identical requests get the recorded replies in order: "one" first, "three" second.
    assert [r.text for r in replayed] == [r.text for r in recorded] == ["one", "two", "three"]
    assert [r.usage for r in replayed] == [r.usage for r in recorded]
    assert replayed[1].usage.estimated
    assert [r.request_key for r in replayed] == [r.request_key for r in recorded]
    assert all(e.source is CallSource.REPLAY and e.cost_usd == 0.0 for e in ledger.entries)
    assert replay.remaining() == 0
    with pytest.raises(CassetteMiss, match="diverged"):
        replay.complete(ASK, role="oracle")  # a fourth identical request was never recorded


def test_unknown_request_and_missing_cassette(tmp_path):
    with pytest.raises(CassetteMiss, match="no cassette"):
        ReplayClient(tmp_path / "absent.jsonl")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(CassetteMiss, match="no recorded reply"):
        ReplayClient(empty, model="openai/x").complete(ASK, role="oracle")


def test_model_free_imports_do_not_load_litellm():
    code = ("import sys, repo2rlenv.cli.main, repo2rlenv.llm, repo2rlenv.pipelines.test_synthesis.oracle.llm; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('litellm', 'openai')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"

"""`solve` and `eval` refuse bad input with one line and exit code 2, before any container or model call."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from repo2rlenv.cli.solver import COMMANDS, eval_command, solve


def test_commands_are_exported_for_registration():
    assert [c.name for c in COMMANDS] == ["solve", "eval"]


@pytest.mark.parametrize(("args", "message"), [
    ([], "give either TASK_DIR (task mode) or --repo PATH"),
    (["{tmp}", "--repo", "{tmp}"], "give either TASK_DIR"),
    (["{tmp}", "--git-base", "HEAD"], "--diff, --git-base, --patch, --target and --python belong to diff mode"),
    (["--repo", "{tmp}"], "diff mode needs exactly one of --diff FILE or --git-base REF"),
    (["--repo", "{tmp}", "--diff", "{tmp}/none.diff", "--llm", "m"], "--diff file not found"),
    (["--repo", "{tmp}/nowhere", "--git-base", "HEAD", "--llm", "m"], "--repo must be a directory"),
    (["{tmp}", "--llm", "m"], "not a task directory (no task.toml)"),
])
def test_solve_usage_errors(tmp_path, args, message):
    result = CliRunner().invoke(solve, [a.format(tmp=tmp_path) for a in args])
    assert result.exit_code == 2, result.output
    assert result.stderr.strip().splitlines() == [result.stderr.strip()]
    assert message in result.stderr


def test_eval_refuses_a_directory_without_tasks(tmp_path):
    result = CliRunner().invoke(eval_command, [str(tmp_path), "--llm", "openai/x"])
    assert result.exit_code == 2 and "not a repo2rlenv dataset" in result.stderr


def test_a_spend_ceiling_without_a_price_is_refused_before_anything_runs(tmp_path, monkeypatch):
    (tmp_path / "tasks" / "t1").mkdir(parents=True)
    monkeypatch.delenv("R2E_PRICE_OPENAI_UNPRICED", raising=False)
    result = CliRunner().invoke(eval_command, [str(tmp_path), "--llm", "openai/unpriced", "--max-spend-usd", "1"])
    assert result.exit_code == 2
    assert "--max-spend-usd needs a price for openai/unpriced" in result.stderr


def _task_dir(root):
    """Files enough for `check_task_dir`: these tests end before any image is built."""
    from repo2rlenv.dataset.taskdir import TaskPaths

    task = TaskPaths(root)
    for path in (task.task_toml, task.instruction, task.dockerfile, task.test_sh):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")
    return task


@pytest.mark.parametrize(("model", "message"), [
    ("scripted", "--llm scripted: litellm cannot tell which provider serves it"),
    ("openai/scripted", "cannot be reached"),
])
def test_a_refused_solve_fails_before_any_container_and_keeps_the_previous_results(tmp_path, model, message):
    task = _task_dir(tmp_path / "task")
    out = tmp_path / "out"
    out.mkdir()
    for name in ("ledger.jsonl", "trajectory.jsonl", "solve-result.json"):
        (out / name).write_text("from the last solve\n")
    import socket

    with socket.socket() as sock:  # a port nobody listens on: the endpoint is down
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    result = CliRunner().invoke(solve, [str(task.root), "--llm", model, "--llm-base-url", url, "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert result.stderr.strip().splitlines()[-1].startswith("error: ") and message in result.stderr
    assert sorted(p.name for p in out.iterdir()) == ["ledger.jsonl", "solve-result.json", "trajectory.jsonl"]
    assert all(p.read_text() == "from the last solve\n" for p in out.iterdir())


def test_eval_checks_the_model_before_any_container_and_writes_nothing(tmp_path, monkeypatch):
    (tmp_path / "data" / "tasks" / "t1").mkdir(parents=True)
    monkeypatch.delenv("R2E_NO_SUCH_KEY", raising=False)
    result = CliRunner().invoke(eval_command, [str(tmp_path / "data"), "--llm", "openai/x", "--api-key-env",
                                               "R2E_NO_SUCH_KEY", "--out", str(tmp_path / "eval")])
    assert result.exit_code == 2 and "R2E_NO_SUCH_KEY is not set" in result.stderr
    assert not (tmp_path / "eval").exists()

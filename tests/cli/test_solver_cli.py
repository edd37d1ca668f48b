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
    (["{tmp}", "--git-base", "HEAD"], "--diff, --git-base and --patch belong to diff mode"),
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

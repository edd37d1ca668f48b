"""Task mode in Docker: `repo2rlenv solve TASK_DIR` on a task generated from examples/minicart, the model
scripted over HTTP; the task's own verifier grades the file in a fresh container."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from repo2rlenv.cli.solver import solve

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def test_solve_task_dir_scores_the_oracle_tests_one(docker_ready, r2e_cache, tmp_path, scripted, scripted_server,
                                                    solver_kit):
    dataset = solver_kit.ensure_dataset(r2e_cache)
    task = solver_kit.task_dirs(dataset)[0]
    test_path, oracle = solver_kit.oracle_text(task)
    scripted_server.responder = solver_kit.task_responder(scripted, {test_path: oracle})
    out = tmp_path / "out"
    result = CliRunner().invoke(solve, [
        str(task), "--llm", solver_kit.MODEL, "--llm-base-url", scripted_server.base_url,
        "--api-key-env", "R2E_TEST_LLM_KEY", "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output + result.stderr

    solved = json.loads(result.output)
    assert solved["task_id"] == task.name
    assert solved["solve"]["stop_reason"] == "solved" and solved["solve"]["rounds"] == 1
    assert solved["grade"]["reward"] == 1.0
    details = solved["grade"]["details"]
    assert (details["b_pass"], details["cov"]) == (1.0, 1.0) and details["b_fail"] > 0  # b_fail: reported only
    assert (out / "solve-result.json").is_file() and (out / "ledger.jsonl").is_file()
    assert (out / task.joinpath(test_path).name).read_text() == oracle
    # The agent saw the instruction and the container, never the grading material.
    broken = (task / "tests" / "broken_patch.diff").read_text()
    changed = [line[1:].strip() for line in broken.splitlines()
               if line.startswith("+") and not line.startswith("+++") and line[1:].strip()]
    sent = "\n".join(r.text() for r in scripted_server.requests)
    assert changed and not any(line in sent for line in changed)
    assert (task / "instruction.md").read_text().strip() in sent

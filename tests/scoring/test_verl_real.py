"""`compute_score` inside verl's own reward loop (verl 0.9.1), scored through real Docker.

verl pins transformers and huggingface_hub below this project's environment, so scripts/dev_setup.sh
installs it into its own venv over the system site-packages (`$R2E_VERL_VENV`, default /opt/r2e-verl),
and verl_reward_loop.py runs there: verl loads our function by path and name from a reward config, its
`NaiveRewardManager` decodes each response and calls it, `assemble_rm_scores` places the scores. Without
that venv the test skips, except under CI, where it fails."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).with_name("verl_reward_loop.py")


@pytest.fixture(scope="session")  # before the session's dataset: a skip costs nothing
def verl_python() -> Path:
    python = Path(os.environ.get("R2E_VERL_VENV", "/opt/r2e-verl")) / "bin" / "python"
    found = python.is_file() and subprocess.run([str(python), "-c", "import verl"], capture_output=True).returncode == 0
    if not found:
        if os.environ.get("CI"):
            pytest.fail(f"CI requires verl in {python.parent.parent} (scripts/dev_setup.sh)")
        pytest.skip(f"no verl venv at {python.parent.parent}; under CI this test fails instead")
    return python


def test_verl_reward_loop_scores_through_compute_score(verl_python, scored_dataset, tmp_path):
    from repo2rlenv.hub.rl_table import RL_TABLE, export_rl

    export_rl(scored_dataset, tmp_path / "rl")
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    run = subprocess.run([str(verl_python), str(SCRIPT), str(scored_dataset), str(tmp_path / "rl" / RL_TABLE),
                          str(tmp_path)], capture_output=True, text=True, timeout=300, env=env)
    assert run.returncode == 0, run.stderr[-4000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])

    assert out["verl"] == "0.9.1" and out["manager"] == "NaiveRewardManager"
    # For each task: its reference file 1.0, a weak file 0.0, an empty response 0.0.
    assert out["scores"] == out["expected"] == [1.0, 0.0, 0.0] * 2
    # verl puts each score on the response's last valid token (the answer token, or eos alone).
    assert out["rm_scores"] == [[0.0, 1.0], [0.0, 0.0], [0.0, 0.0]] * 2
    # Every response has the same extra keys, which verl gathers into columns.
    keys = {"score", "b_pass", "b_fail", "cov", "mutation_score", "error"}
    assert all(set(k) == keys for k in out["extra_keys"])
    assert out["columns"]["error"] == [None] * 6 and out["columns"]["score"] == out["scores"]

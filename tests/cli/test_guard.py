"""cli/guard.py: SIGTERM ends a command as Ctrl-C does — a generate run stops cleanly, exits 130 and leaves
a summary that says how far it got and where its time went (issue 34 item 1)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest


@pytest.mark.slow
def test_sigterm_stops_generate_with_a_summary(example_repo, tmp_path):
    out = tmp_path / "ds"
    out.mkdir()  # --out existed before the run: what the run writes stays (generate.remove_partial_output)
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    proc = subprocess.Popen([sys.executable, "-m", "repo2rlenv", "generate", "--pipeline", "test_synthesis",
                             "--repo", str(example_repo), "--out", str(out), "--sandbox", "local",
                             "--pipeline-opt", "strategy=mutation", "--pipeline-opt", "limit=3"],
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env)
    assert proc.stderr is not None
    seen = []
    deadline = time.monotonic() + 600
    for line in proc.stderr:  # the stage header of mining: the environment and the baseline are done
        seen.append(line)
        if "mining candidates" in line or time.monotonic() > deadline:
            break
    proc.send_signal(signal.SIGTERM)
    rest = proc.stderr.read()
    assert proc.wait(timeout=120) == 130, "".join(seen) + rest
    assert "interrupted" in rest
    summary = json.loads((out / "summary.json").read_text())
    assert summary["stopped"] == "interrupted; a rerun continues"
    assert {"environment", "baseline"} <= set(summary["time"]["stages_sec"])

#!/bin/bash
# Grade a test_synthesis task. Harbor copies the task's tests/ to /tests after the agent finishes and
# runs this file; only /logs/verifier/reward.txt counts (this script's exit code is ignored).
#
# verifier.py always writes reward.txt itself (0 with a reason on any failure) and exits 0 once it has.
# If it could not (killed, crashed, no interpreter), the reward is 0 — even when a file named reward.txt
# exists, since a test run could have left one there.
mkdir -p /logs/verifier
status=1
finish() {
  if [ "$status" -ne 0 ] || [ ! -s /logs/verifier/reward.txt ]; then
    rm -rf /logs/verifier/reward.txt /logs/verifier/reward.json
    echo 0 > /logs/verifier/reward.txt
  fi
}
trap finish EXIT

PY=/opt/venv/bin/python
if [ ! -x "$PY" ]; then
  PY=python3
fi
# -E: ignore PYTHON* variables; -s: no user site-packages; -B: write no bytecode into /tests.
# --strays kill: first stop every process the agent left in this container (verifier_strays.py).
# Harbor passes no arguments; a scorer passes `--batch /tests/batch` to grade a group (verifier.score_batch).
"$PY" -E -s -B /tests/verifier.py --config /tests/verifier_config.json --workspace /workspace --logs /logs/verifier \
  --strays kill "$@"
status=$?

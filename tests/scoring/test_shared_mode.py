"""Grading in the agent's own container (Harbor's shared mode, TRL's Harbor environment) holds alone
(Docker): after an agent that plants a conftest.py and a pytest plugin in site-packages, changes A's files
and leaves a daemon that rewrites reward.txt, the reward equals a clean grading's in a fresh container."""

from __future__ import annotations

import time

import pytest

from repo2rlenv.dataset.task_toml import TaskToml
from repo2rlenv.dataset.taskdir import DatasetPaths
from repo2rlenv.sandbox.docker import DockerSession, docker_client
from repo2rlenv.scoring import TaskScorer
from repo2rlenv.validate import build_task_image, grade_in, verifier_files
from repo2rlenv.verifiers.test_synthesis.verifier_strays import BOOT_WINDOW_SEC

pytestmark = pytest.mark.slow

WEAK = "def test_nothing():\n    assert True\n"

# Forces every case to pass: as a conftest or as a plugin, it would make any file score like the oracle.
ALWAYS_PASS = '''import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    outcome.get_result().outcome = "passed"
'''
# Waits for the verifier's details, then writes its own reward over the verifier's.
DAEMON = '''import os, time
while True:
    try:
        if os.path.exists("/logs/verifier/reward-details.json"):
            with open("/logs/verifier/reward.txt", "w") as fh:
                fh.write("1\\n")
    except OSError:
        pass
    time.sleep(0.005)
'''
# What a hostile or careless agent does as root before the verifier runs (files staged by _mess).
MESS = """set -e
cp /tmp/mess/always_pass.py /workspace/tests/conftest.py
cp /tmp/mess/always_pass.py /workspace/conftest.py
SITE=$(/opt/venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
cp /tmp/mess/always_pass.py "$SITE/r2e_evil_plugin.py"
mkdir -p "$SITE/r2e_evil_plugin-1.0.dist-info"
printf 'Metadata-Version: 2.1\\nName: r2e-evil-plugin\\nVersion: 1.0\\n' > "$SITE/r2e_evil_plugin-1.0.dist-info/METADATA"
printf '[pytest11]\\nevil = r2e_evil_plugin\\n' > "$SITE/r2e_evil_plugin-1.0.dist-info/entry_points.txt"
printf 'r2e_evil_plugin.py,,\\n' > "$SITE/r2e_evil_plugin-1.0.dist-info/RECORD"
printf '\\nraise RuntimeError("changed by the agent")\\n' >> "/workspace/$1"
setsid nohup /opt/venv/bin/python /tmp/mess/daemon.py >/dev/null 2>&1 < /dev/null &
sleep 0.5
"""


def _meta(task):
    return TaskToml.from_toml(task.task_toml.read_text()).metadata.repo2env.test_synthesis


def _shared_grading(client, task, image, limits, source: str, *, mess: bool) -> tuple[float | None, dict]:
    """The agent's turn and then the verifier, in one container, as shared mode grades."""
    meta = _meta(task)
    with DockerSession(client, image, limits, harden=False) as session:
        session.write_files({f"/workspace/{meta.test_path}": source})
        if mess:
            # An agent's turn starts after the environment's start-up; processes of the container's first
            # seconds are its own (verifier_strays.BOOT_WINDOW_SEC).
            time.sleep(BOOT_WINDOW_SEC + 0.5)
            session.write_files({"/tmp/mess/mess.sh": MESS, "/tmp/mess/always_pass.py": ALWAYS_PASS,
                                 "/tmp/mess/daemon.py": DAEMON})
            done = session.exec(["bash", "/tmp/mess/mess.sh", meta.touched_function.split("::")[0]], timeout=60)
            assert done.exit_code == 0, done.tail(5)
            running = session.exec(["pgrep", "-f", "/tmp/mess/daemon.py"], timeout=30)
            assert running.exit_code == 0, "the daemon outlived the agent's command"
        outcome = grade_in(session, verifier_files(task), 600)
    return outcome.reward, outcome.details


def test_shared_grading_after_a_messy_agent_equals_a_clean_one(scored_dataset, oracle_of):
    data = DatasetPaths(scored_dataset)
    task = data.task(data.task_ids()[0])
    oracle = oracle_of(scored_dataset, task.root.name)
    target = _meta(task).touched_function.split("::")[0]
    client = docker_client()
    image = build_task_image(client, task)
    with TaskScorer(task.root, client=client) as scorer:
        limits = scorer.limits
        clean = {"oracle": scorer.score(oracle).reward, "weak": scorer.score(WEAK).reward}
    assert clean == {"oracle": 1.0, "weak": 0.0}
    for name, source in (("oracle", oracle), ("weak", WEAK)):
        reward, details = _shared_grading(client, task, image, limits, source, mess=True)
        assert reward == clean[name], (name, details.get("reason"))
        assert details["strays_killed"] >= 1, "the reward-rewriting daemon was stopped first"
        assert target in details["restored_workspace_files"]
        assert {"conftest.py", "tests/conftest.py"} <= set(details["ignored_workspace_files"])
    # Without the mess nothing is stopped or restored: the counts above are the agent's doing.
    reward, details = _shared_grading(client, task, image, limits, oracle, mess=False)
    assert (reward, details["strays_killed"], details["restored_workspace_files"]) == (1.0, 0, [])

"""Session containers of killed runs are removed by the next run; live runs' and other hosts' are not."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from repo2rlenv.sandbox import owners
from repo2rlenv.sandbox.docker import LABEL, DockerSandbox, docker_client
from repo2rlenv.sandbox.base import Limits

BASE = os.environ.get("R2E_BASE_IMAGE", "repo2rlenv-base:bookworm")

# A run that opens a session and then waits to be killed; it prints the container's id when it is up.
_CHILD = textwrap.dedent(f"""
    import sys, time
    from repo2rlenv.sandbox.docker import DockerSession, docker_client
    from repo2rlenv.sandbox.base import Limits
    session = DockerSession(docker_client(), {BASE!r}, Limits(timeout_sec=30))
    print(session._container.id, flush=True)
    time.sleep(600)
""")


def test_owner_labels_tell_live_from_gone():
    mine = owners.owner_label()
    assert owners.owner_alive(mine)
    child = subprocess.run([sys.executable, "-c", "from repo2rlenv.sandbox import owners; print(owners.owner_label())"],
                           capture_output=True, text=True, check=True).stdout.strip()
    assert child.split(":")[1] != mine.split(":")[1]
    assert not owners.owner_alive(child)  # the child has exited
    # A pid that is reused by another process has another start time: not the owner.
    host, pid, _start = mine.split(":")
    assert not owners.owner_alive(f"{host}:{pid}:1")
    assert owners.owner_alive(f"another-host:{pid}:1")  # not ours to judge


def test_a_killed_runs_container_is_reaped_and_a_live_ones_is_kept(docker_ready):
    client = docker_client()
    child = subprocess.Popen([sys.executable, "-c", _CHILD], stdout=subprocess.PIPE, text=True)
    try:
        killed_id = child.stdout.readline().strip()
        assert killed_id, "the child did not open its session"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    live = client.containers.run(BASE, ["sleep", "infinity"], detach=True, network_mode="none",
                                 labels={LABEL: "session", owners.OWNER_LABEL: owners.owner_label()})
    foreign = client.containers.run(BASE, ["sleep", "infinity"], detach=True, network_mode="none",
                                    labels={LABEL: "session", owners.OWNER_LABEL: "another-host:1:1"})
    try:
        assert client.containers.get(killed_id).status in ("running", "created")
        owners._reaped = False  # as in a new process
        DockerSandbox(base_image=BASE, limits=Limits(timeout_sec=30), client=client)
        ids = {c.id for c in client.containers.list(all=True, filters={"label": f"{LABEL}=session"})}
        assert killed_id not in ids
        assert {live.id, foreign.id} <= ids
        # Once per process: a second sandbox does not list containers again.
        assert owners.reap_once(client, f"{LABEL}=session") == 0
    finally:
        for container in (live, foreign):
            container.remove(force=True)
        try:
            client.containers.get(killed_id).remove(force=True)
        except Exception:
            pass


@pytest.mark.parametrize("name", ["python3", "a) b (c", "x y)"])
def test_start_time_is_field_22_whatever_the_command_name(tmp_path, monkeypatch, name):
    path = tmp_path / "stat"
    path.write_text(f"123 ({name}) " + " ".join(f"f{i}" for i in range(3, 53)) + "\n")
    real_open = open
    monkeypatch.setattr("builtins.open",
                        lambda p, *a, **k: real_open(path if str(p) == "/proc/123/stat" else p, *a, **k))
    assert owners._start_time(123) == "f22"

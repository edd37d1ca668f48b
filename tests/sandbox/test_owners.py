"""Session containers die with their owner (the tether) and orphans are removed by the next run; live runs'
and other hosts' containers are kept."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import docker

import pytest

from repo2rlenv.sandbox import owners
from repo2rlenv.sandbox.docker import LABEL, DockerSandbox, DockerSession, docker_client
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


def _gone(client, container_id: str, within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            client.containers.get(container_id)
        except docker.errors.NotFound:
            return True
        time.sleep(0.2)
    return False


def test_a_session_container_dies_with_its_killed_owner(docker_ready):
    client = docker_client()
    child = subprocess.Popen([sys.executable, "-c", _CHILD], stdout=subprocess.PIPE, text=True)
    try:
        container_id = child.stdout.readline().strip()
        assert container_id, "the child did not open its session"
        # While the owner lives (idle for a while), its container runs.
        time.sleep(3)
        assert client.containers.get(container_id).status == "running"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    # No reaper runs here: the tether alone removes it.
    assert _gone(client, container_id, within=20)


def test_a_closed_session_leaves_no_container(docker_ready):
    client = docker_client()
    session = DockerSession(client, BASE, Limits(timeout_sec=30))
    container_id = session._container.id
    assert session.exec(["true"]).exit_code == 0
    session.close()
    assert _gone(client, container_id, within=10)


def test_untethered_orphans_are_reaped_and_live_or_foreign_ones_kept(docker_ready):
    client = docker_client()
    # An owner that has exited: a run killed between creating a container and tethering it, or an older
    # version's `sleep infinity` container.
    dead_owner = subprocess.run([sys.executable, "-c", "from repo2rlenv.sandbox import owners; print(owners.owner_label())"],
                                capture_output=True, text=True, check=True).stdout.strip()

    def idle(owner: str):
        return client.containers.run(BASE, ["sleep", "infinity"], detach=True, network_mode="none",
                                     labels={LABEL: "session", owners.OWNER_LABEL: owner})

    orphan, live, foreign = idle(dead_owner), idle(owners.owner_label()), idle("another-host:1:1")
    try:
        owners._reaped = False  # as in a new process
        DockerSandbox(base_image=BASE, limits=Limits(timeout_sec=30), client=client)
        ids = {c.id for c in client.containers.list(all=True, filters={"label": f"{LABEL}=session"})}
        assert orphan.id not in ids
        assert {live.id, foreign.id} <= ids
        # Once per process: a second sandbox does not list containers again.
        assert owners.reap_once(client, f"{LABEL}=session") == 0
    finally:
        for container in (orphan, live, foreign):
            try:
                container.remove(force=True)
            except docker.errors.NotFound:
                pass


@pytest.mark.parametrize("name", ["python3", "a) b (c", "x y)"])
def test_start_time_is_field_22_whatever_the_command_name(tmp_path, monkeypatch, name):
    path = tmp_path / "stat"
    path.write_text(f"123 ({name}) " + " ".join(f"f{i}" for i in range(3, 53)) + "\n")
    real_open = open
    monkeypatch.setattr("builtins.open",
                        lambda p, *a, **k: real_open(path if str(p) == "/proc/123/stat" else p, *a, **k))
    assert owners._start_time(123) == "f22"

"""Both sandboxes, for real: no network (Docker; local when unshare works), no secrets, killed hangs."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from repo2rlenv.sandbox.base import Limits, scrub_env

PROBE_TESTS = {
    "tests/test_net.py": (
        "import socket\n\n"
        "def test_socket_connects():\n"
        "    s = socket.create_connection(('1.1.1.1', 53), timeout=3)\n"
        "    s.close()\n"
    ),
    "tests/test_env.py": (
        "import os\n\n"
        "def test_no_secrets():\n"
        "    leaked = sorted(k for k in os.environ if any(w in k.upper() for w in ('KEY', 'TOKEN', 'SECRET', 'PASSWORD')))\n"
        "    assert leaked == []\n"
    ),
    "tests/test_hang.py": (
        "import subprocess, time\n\n"
        "def test_hangs():\n"
        "    subprocess.Popen(['sleep', '1000'])\n"
        "    time.sleep(1000)\n"
    ),
    "probe/__init__.py": "",
    "setup.py": "from setuptools import setup\nsetup(name='probe', version='0', packages=['probe'])\n",
}


def _write(root: Path) -> Path:
    for rel, text in PROBE_TESTS.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def _pytest_in(session, test_file: str, timeout: float):
    return session.exec([session.python, "-m", "pytest", "-q", "-p", "no:cacheprovider", test_file],
                        timeout=timeout)


@pytest.fixture(scope="module", params=["docker", "local"])
def session(request, tmp_path_factory):
    root = _write(tmp_path_factory.mktemp("probe") / "probe")
    limits = Limits(timeout_sec=60, memory_mb=1024, pids=256)
    if request.param == "docker":
        request.getfixturevalue("docker_ready")
        from repo2rlenv.sandbox.docker import DockerSandbox

        sandbox = DockerSandbox(base_image=os.environ.get("R2E_BASE_IMAGE", "repo2rlenv-base:bookworm"),
                                limits=limits, tag_name="probe")
    else:
        from repo2rlenv.sandbox.local import LocalSandbox

        sandbox = LocalSandbox(limits=limits, cache_dir=tmp_path_factory.mktemp("cache"))
    sandbox.prepare(root)
    sess = sandbox.open()
    sess.kind = request.param  # type: ignore[attr-defined]
    sess.sandbox = sandbox  # type: ignore[attr-defined]
    yield sess
    sess.close()


def test_no_network(session):
    if not session.sandbox.network_isolated:
        pytest.fail("the sandbox cannot isolate the network here (local sandbox needs `unshare --net`)")
    res = _pytest_in(session, "tests/test_net.py", 60)
    assert res.exit_code == 1, res.tail()
    assert "1 failed" in res.stdout
    # The failure is the network being absent, not a typo in the probe.
    assert any(word in res.stdout for word in ("Network is unreachable", "OSError", "gaierror", "unreachable"))


def test_secrets_do_not_reach_the_sandbox(session, monkeypatch):
    monkeypatch.setenv("MY_API_KEY", "hunter2")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_x")
    # Even when a caller passes secret-looking variables explicitly, they are dropped.
    res = session.exec([session.python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_env.py"],
                       env={"HF_TOKEN": "x", "DB_PASSWORD": "y", "SOME_SECRET": "z", "OK_VAR": "1"}, timeout=60)
    assert res.exit_code == 0, res.tail()
    env = session.exec(["env"], env={"OK_VAR": "1", "AWS_SECRET_ACCESS_KEY": "x"}, timeout=30)
    assert "OK_VAR=1" in env.stdout
    assert "AWS_SECRET" not in env.stdout and "hunter2" not in env.stdout


def test_scrub_env_drops_secret_names():
    kept = scrub_env({"PATH": "/bin", "OPENAI_API_KEY": "k", "npm_token": "t", "PASSWD_FILE": "p", "X": "1"})
    assert kept == {"PATH": "/bin", "X": "1"}


def test_hanging_suite_is_killed_within_timeout_and_leaves_nothing(session):
    timeout = 5.0
    start = time.monotonic()
    res = _pytest_in(session, "tests/test_hang.py", timeout)
    elapsed = time.monotonic() - start
    assert res.timed_out
    assert elapsed < timeout + 5, elapsed
    # No process of the run is left: neither pytest nor the `sleep 1000` it spawned.
    if session.kind == "docker":
        ps = session.exec(["ps", "-eo", "args"], timeout=30).stdout
        assert "sleep 1000" not in ps and "test_hang" not in ps, ps
    else:
        ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
        assert "sleep 1000" not in ps, ps


def test_docker_session_close_removes_container(tmp_path, docker_ready):
    import docker

    from repo2rlenv.sandbox.docker import DockerSandbox

    root = _write(tmp_path / "probe")
    sandbox = DockerSandbox(base_image=os.environ.get("R2E_BASE_IMAGE", "repo2rlenv-base:bookworm"),
                            limits=Limits(timeout_sec=30), tag_name="probe")
    sandbox.prepare(root)
    sess = sandbox.open()
    name = sess._container.name
    client = docker.from_env()
    assert client.containers.get(name).status == "running"
    sess.close()
    with pytest.raises(docker.errors.NotFound):
        client.containers.get(name)

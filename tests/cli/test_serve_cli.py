"""`repo2rlenv serve` as a user runs it: bad input is one line and exit 2; `--help` loads no scoring code;
a real server in its own process scores over HTTP and exits 0 on SIGTERM after closing its warm pools."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "repo2rlenv", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=120)


def _one_error_line(res: subprocess.CompletedProcess) -> str:
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert "Traceback" not in res.stderr
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), res.stderr
    return lines[0]


def _fake_dataset(root: Path) -> Path:
    (root / "tasks" / "t1").mkdir(parents=True)
    (root / "tasks" / "t1" / "task.toml").write_text("")
    return root


def test_a_missing_dataset_is_one_line(tmp_path):
    assert "not a repo2rlenv dataset" in _one_error_line(cli("serve", str(tmp_path / "nope")))
    assert "not a repo2rlenv dataset" in _one_error_line(cli("serve", str(tmp_path)))


@pytest.mark.parametrize("flags, says", [
    (["--concurrency", "0"], "--concurrency"),
    (["--timeout", "0"], "--timeout"),
    (["--token", " "], "--token is empty"),
])
def test_bad_limits_are_one_line(tmp_path, flags, says):
    assert says in _one_error_line(cli("serve", str(_fake_dataset(tmp_path)), *flags))


@pytest.mark.docker
def test_a_port_in_use_is_one_line(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        line = _one_error_line(cli("serve", str(_fake_dataset(tmp_path)), "--port", str(port)))
    assert f"cannot listen on 127.0.0.1:{port}" in line


def test_help_loads_no_scoring_code():
    probe = ("import sys\nfrom repo2rlenv.cli.main import main\n"
             "try:\n    main(['serve', '--help'])\nexcept SystemExit:\n    pass\n"
             "print(sorted(m for m in sys.modules if m.startswith(('docker', 'http.server', 'repo2rlenv.scoring'))))")
    res = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "Usage:" in res.stdout and res.stdout.strip().endswith("[]"), res.stdout


@pytest.mark.slow
@pytest.mark.docker
def test_serves_and_stops_cleanly_on_sigterm(scored_dataset, oracle_of):
    from repo2rlenv.dataset.taskdir import DatasetPaths

    task_id = DatasetPaths(scored_dataset).task_ids()[0]
    proc = subprocess.Popen([sys.executable, "-m", "repo2rlenv", "serve", str(scored_dataset), "--port", "0"],
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "REPO2RLENV_SERVE_TOKEN": "tok"})
    try:
        first = proc.stderr.readline()
        assert " at http://127.0.0.1:" in first, first
        url = first.split(" at ", 1)[1].split()[0]
        with urllib.request.urlopen(f"{url}/health", timeout=30) as resp:
            assert json.load(resp)["ok"] is True
        body = json.dumps({"task_id": task_id, "source": oracle_of(scored_dataset, task_id)}).encode()
        request = urllib.request.Request(f"{url}/score", data=body, method="POST",
                                         headers={"Authorization": "Bearer tok", "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=600) as resp:
            assert json.load(resp)["reward"] == 1.0
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=120) == 0
        rest = proc.stderr.read()
        assert "SIGTERM: finishing admitted scores and closing the warm pools" in rest, rest
        assert "Traceback" not in rest
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _post(url: str, task_id: str, source: str | None) -> tuple[int, dict[str, str], dict]:
    body = json.dumps({"task_id": task_id, "source": source}).encode()
    request = urllib.request.Request(f"{url}/score", data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=600) as resp:
            return resp.status, dict(resp.headers), json.load(resp)
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), json.load(exc)


@pytest.mark.slow
@pytest.mark.docker
def test_serves_on_a_local_ray_cluster_with_a_bounded_queue(scored_dataset, oracle_of):
    """`--ray-address local`: the service starts a one-node Ray cluster; a burst past concurrency + queue is
    answered 429 with Retry-After, every admitted request with its right reward; SIGTERM stops Ray too."""
    if not os.environ.get("CI"):  # under CI Ray is required (the dev extra)
        pytest.importorskip("ray")
    from concurrent.futures import ThreadPoolExecutor

    from repo2rlenv.dataset.taskdir import DatasetPaths

    task_id = DatasetPaths(scored_dataset).task_ids()[0]
    oracle = oracle_of(scored_dataset, task_id)
    proc = subprocess.Popen([sys.executable, "-m", "repo2rlenv", "serve", str(scored_dataset), "--port", "0",
                             "--ray-address", "local", "--concurrency", "1", "--queue", "1", "--quiet"],
                            stderr=subprocess.PIPE, text=True)
    try:
        line = ""
        while " at http://127.0.0.1:" not in line:  # Ray logs its own start-up lines first
            line = proc.stderr.readline()
            assert line or proc.poll() is None, "serve exited before listening"
        assert "concurrency 1 on 1 Ray node" in line, line
        url = line.split(" at ", 1)[1].split()[0]
        with ThreadPoolExecutor(6) as burst:
            answers = list(burst.map(lambda source: _post(url, task_id, source), [oracle, None] * 3))
        served = [(source, body) for source, (status, _, body) in zip([oracle, None] * 3, answers) if status == 200]
        busy = [headers for status, headers, _ in answers if status == 429]
        assert len(served) + len(busy) == 6 and served and busy, answers
        assert all(int(h["Retry-After"]) >= 1 for h in busy)
        assert all(body["reward"] == (1.0 if source else 0.0) and body["error"] is None for source, body in served)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=120) == 0
        assert "Traceback" not in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()

"""Tests that need the network: told from their failure text, quarantined as "needs network" and counted on
their own; in Docker (no network) for real."""

from __future__ import annotations

import re

import pytest

from repo2rlenv.baseline.network import NEEDS_NETWORK, NETWORK_SIGNATURES, network_cause, needs_network
from repo2rlenv.baseline.runner import SuiteRunner, run_baseline
from repo2rlenv.sandbox.base import Limits


def test_signatures_are_unique():
    patterns = [p for p, _ in NETWORK_SIGNATURES]
    assert len(patterns) == len(set(patterns))


@pytest.mark.parametrize(("text", "cause"), [
    ("E   socket.gaierror: [Errno -3] Temporary failure in name resolution", "DNS lookup failed (socket)"),
    ("E   OSError: [Errno 101] Network is unreachable", "no route (ENETUNREACH)"),
    ("E   ConnectionRefusedError: [Errno 111] Connection refused", "connection refused (ECONNREFUSED)"),
    ("E   urllib.error.URLError: <urlopen error [Errno -2] Name or service not known>",
     "DNS lookup failed (EAI_NONAME)"),
    ("E   requests.exceptions.ConnectionError: HTTPSConnectionPool(host='x', port=443): Max retries exceeded",
     "requests could not connect"),
    ("urllib3.exceptions.NewConnectionError: <...>: Failed to establish a new connection", "urllib3 could not connect"),
    ("E   httpx.ConnectError: [Errno -3] Temporary failure in name resolution", "DNS lookup failed (EAI_AGAIN)"),
])
def test_network_failures_are_recognised(text, cause):
    assert needs_network(text)
    assert network_cause(text) is not None
    assert cause in {c for p, c in NETWORK_SIGNATURES if re.search(p, text)}


@pytest.mark.parametrize("text", [
    "E   assert 2 == 3", "E   KeyError: 'connection'", "E   ValueError: bad network mask", "",
])
def test_other_failures_are_not(text):
    assert not needs_network(text)


TESTS = (
    "import socket, urllib.request\n"
    "from tinypkg.core import add\n\n"
    "def test_add():\n    assert add(1, 2) == 3\n\n"
    "def test_download():\n    urllib.request.urlopen('http://example.com/', timeout=5)\n\n"
    "def test_resolve():\n    socket.create_connection(('example.com', 80), timeout=5)\n\n"
    "def test_wrong():\n    assert add(1, 1) == 3\n"
)


def test_network_tests_are_quarantined_with_the_reason_in_docker(request, make_repo, tiny_package):
    root = make_repo(tiny_package(TESTS), commit=False)
    sandbox = request.getfixturevalue("make_sandbox")("docker", Limits(timeout_sec=120), "network-test",
                                                       request.getfixturevalue("r2e_cache"))
    sandbox.prepare(root)
    with sandbox.open() as session:
        report = run_baseline(SuiteRunner(session, sandbox.plan.import_roots), reruns=1, timeout=120)
    assert report.stable_passing == ["tests/test_core.py::test_add"]
    assert report.needs_network == ["tests/test_core.py::test_download", "tests/test_core.py::test_resolve"]
    for nodeid in report.needs_network:
        assert report.quarantined[nodeid].startswith(NEEDS_NETWORK)
    assert report.quarantined["tests/test_core.py::test_wrong"].startswith("fails at the ref")

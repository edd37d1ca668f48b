"""Tests that fail on A only because the sandbox has no network, told from their failure text.

Baseline runs have no network (`network_mode="none"`). A test that resolves a host name, opens a socket
to the internet or downloads something fails there on A for a reason that says nothing about the code:
it is quarantined as "needs network" (never a gate) and counted on its own, so a summary can say
"tests need network: 12 quarantined" instead of "fails at the ref".
"""

from __future__ import annotations

import re

NEEDS_NETWORK = "needs network"

# (what the failure text shows, the library or errno behind it). Matched against the end of pytest's
# failure report, so a chained exception (requests wrapping urllib3 wrapping socket) matches at any layer.
NETWORK_SIGNATURES: tuple[tuple[str, str], ...] = (
    (r"socket\.gaierror", "DNS lookup failed (socket)"),
    (r"Temporary failure in name resolution", "DNS lookup failed (EAI_AGAIN)"),
    (r"Name or service not known", "DNS lookup failed (EAI_NONAME)"),
    (r"nodename nor servname provided", "DNS lookup failed (macOS)"),
    (r"\[Errno 101\] Network is unreachable|Network is unreachable", "no route (ENETUNREACH)"),
    (r"\[Errno 113\] No route to host", "no route (EHOSTUNREACH)"),
    (r"ConnectionRefusedError|\[Errno 111\] Connection refused", "connection refused (ECONNREFUSED)"),
    (r"urllib\.error\.URLError|<urlopen error", "urllib could not connect"),
    (r"requests\.exceptions\.ConnectionError", "requests could not connect"),
    (r"urllib3\.exceptions\.(?:NewConnectionError|MaxRetryError|NameResolutionError)", "urllib3 could not connect"),
    (r"httpx\.(?:ConnectError|ConnectTimeout)", "httpx could not connect"),
    (r"aiohttp\.client_exceptions\.ClientConnectorError", "aiohttp could not connect"),
    (r"Failed to establish a new connection", "a client could not connect"),
)
_PATTERN = re.compile("|".join(f"(?:{p})" for p, _ in NETWORK_SIGNATURES))


def needs_network(failure_text: str) -> bool:
    """Whether a failure report shows a test that could not reach the network."""
    return bool(failure_text) and _PATTERN.search(failure_text) is not None


def network_cause(failure_text: str) -> str | None:
    """Which signature matched, in words (None when none did)."""
    for pattern, cause in NETWORK_SIGNATURES:
        if re.search(pattern, failure_text or ""):
            return cause
    return None

"""Who owns a session container, and removing the ones whose owner is gone.

A session container runs `sleep infinity` until its session closes it. A run that is killed (SIGKILL, a
lost terminal, a CI timeout) never closes it, and the container then holds memory and a process budget
until someone removes it by hand; a corpus run that was stopped twice left fourteen. Every container is
therefore labelled with its owner: this host, the owning process's pid and that process's start time (a
pid alone can be reused). The first Docker sandbox of a process removes the containers of owners on this
host that no longer run. Containers of other hosts sharing the daemon are left alone.
"""

from __future__ import annotations

import os
import socket
from typing import Any

OWNER_LABEL = "repo2rlenv.owner"
_reaped = False


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (/proc/PID/stat field 22), or None if it is gone."""
    try:
        stat = open(f"/proc/{pid}/stat", encoding="ascii", errors="replace").read()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: count fields after its last ')'.
    return stat.rsplit(")", 1)[1].split()[19]


def owner_label() -> str:
    """`host:pid:start` of this process."""
    pid = os.getpid()
    return f"{socket.gethostname()}:{pid}:{_start_time(pid) or 0}"


def owner_alive(label: str) -> bool:
    """Whether the process named by `label` still runs (a label of another host counts as alive)."""
    host, _, rest = label.partition(":")
    pid, _, start = rest.partition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return True
    return _start_time(int(pid)) == start


def reap_orphans(client: Any, label: str) -> int:
    """Remove containers carrying `label` whose owner is gone; the number removed."""
    removed = 0
    for container in client.containers.list(all=True, filters={"label": label}):
        owner = (container.labels or {}).get(OWNER_LABEL)
        if owner is None or owner_alive(owner):
            continue
        try:
            container.remove(force=True)
            removed += 1
        except Exception:  # removed meanwhile by its own run's cleanup, or by another reaper
            pass
    return removed


def reap_once(client: Any, label: str) -> int:
    """`reap_orphans` the first time a process asks; later calls cost nothing."""
    global _reaped
    if _reaped:
        return 0
    _reaped = True
    return reap_orphans(client, label)

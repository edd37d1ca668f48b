"""Session containers die with the process that owns them; orphans of killed runs are removed.

A session container idles until its session closes it. A run that is killed (SIGKILL, a lost terminal, a
CI timeout, a lost Ray worker) never closes it, and the container would then hold memory and a process
budget until someone removed it by hand; a corpus run that was stopped twice once left fourteen. Two
guards, either enough alone:

- **A tether** (`start_tethered`): the container's only process reads its stdin until end of file, and the
  owner holds the attach connection to that stdin. Docker closes a container's stdin when its one
  attached client goes (StdinOnce), which the kernel does for a killed owner: the reader sees end of file,
  the container stops and is removed (AutoRemove). Nothing in the container must see the host for this.
- **Owner labels** (`reap_orphans`): every container carries its owner (this host, the pid and its start
  time, since a pid alone can be reused). The first Docker sandbox of a process removes the containers of
  owners on this host that no longer run: containers created by a run killed before it tethered them, or
  started by an older version. Containers of other hosts sharing the daemon are left alone.
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


# The idle process: copies stdin to nowhere until the owner's attach closes it. `cat` is in every image
# a repo can be installed in (coreutils, busybox).
TETHER_COMMAND = ["cat"]


def start_tethered(client: Any, image: str, **kwargs: Any) -> tuple[Any, Any]:
    """Create and start a container idling on its stdin, tethered to this process; returns the container
    and the attach socket, which the caller keeps open for as long as the container should live (closing
    it, or this process dying, stops and removes the container)."""
    # docker-py sets StdinOnce with stdin_open: stdin closes when the (one) attached client goes.
    container = client.containers.create(image, TETHER_COMMAND, stdin_open=True, auto_remove=True, **kwargs)
    try:
        # Attached before start: there is no moment when the container runs untethered.
        sock = container.attach_socket(params={"stdin": 1, "stream": 1})
        container.start()
    except BaseException:
        try:
            container.remove(force=True)
        except Exception:
            pass
        raise
    return container, sock

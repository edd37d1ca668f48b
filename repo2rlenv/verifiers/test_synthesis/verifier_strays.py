"""Processes the agent left behind, stopped before grading starts.

Where grading runs in the agent's own container (Harbor's shared mode; trainers that verify inside the
rollout's sandbox), a process the agent started can outlive its turn: a daemon that waits for
reward.txt and rewrites it, one that edits files while the runs read them, one that hogs the CPU so runs
time out. The verifier run by test.sh kills, before anything else, every process of the container except

- PID 1, and the container's own first processes: children of PID 1 started within `BOOT_WINDOW_SEC` of it
  (the `sleep infinity` a runtime keeps the container alive with, a sandbox provider's daemon);
- its own ancestors: the exec chain that started test.sh.

Rounds repeat until one finds nothing to kill (a stray that forks while being killed is caught in the
next), at most `MAX_ROUNDS`. In a fresh verifier container (separate mode) there is nothing to kill.
Only `main()` (test.sh) does this: a host process calling `score()` never signals anything.

Stdlib only: copied verbatim into every task.
"""

from __future__ import annotations

import os
import signal
import time

BOOT_WINDOW_SEC = 2.0
MAX_ROUNDS = 20


def _stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, start time in clock ticks since boot), or None when the process is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            raw = handle.read().decode("ascii", "replace")
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may itself hold spaces and parentheses.
    fields = raw[raw.rindex(")") + 2:].split()
    try:
        return int(fields[1]), int(fields[19])
    except (IndexError, ValueError):
        return None


def _pids() -> list[int]:
    try:
        return [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []


def protected(me: int | None = None) -> set[int]:
    """PID 1, its children from the container's first `BOOT_WINDOW_SEC`, and `me` with its ancestors."""
    me = os.getpid() if me is None else me
    keep = {1, me}
    pid = me
    while pid > 1:
        info = _stat(pid)
        if info is None:
            break
        pid = info[0]
        keep.add(pid)
    init = _stat(1)
    if init is not None:
        window = BOOT_WINDOW_SEC * os.sysconf("SC_CLK_TCK")
        for pid in _pids():
            info = _stat(pid)
            if info is not None and info[0] == 1 and info[1] - init[1] <= window:
                keep.add(pid)
    return keep


def reap() -> int:
    """Kill every process outside `protected()`; returns how many were signalled."""
    killed = 0
    for _ in range(MAX_ROUNDS):
        keep = protected()
        strays = [pid for pid in _pids() if pid not in keep]
        hit = 0
        for pid in strays:
            try:
                os.kill(pid, signal.SIGKILL)
                hit += 1
            except OSError:  # gone already, or not ours to signal
                pass
        killed += hit
        if not hit:
            break
        time.sleep(0.05)
    return killed

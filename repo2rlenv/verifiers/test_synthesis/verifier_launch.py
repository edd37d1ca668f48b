"""Starting and ending the test-run processes: the warm zygote, its subprocess fallback, and cleanup.

The verifier asks for a run with a job (see `verifier_zygote`) and a wall clock; it gets back how the
run ended. Two ways to start one:
- `Zygote`: one warm process, started before any grading material is read, forks a child per run
  (pytest and its plugins are imported once, not once per run);
- `launch_subprocess`: a fresh interpreter per run running the same child code — the fallback when the
  zygote does not start or is lost. Its runs are the verifier's own children, so their pid gap to it
  grows run by run; the lint, not the process tree, keeps pid-counting submissions out there.
Either way each run is its own session: on the wall clock the verifier kills the whole process group,
and after every run `end_session` removes what is left of the session (and reaps it).

Stdlib only: copied verbatim into every task.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import time
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

ZYGOTE_SOURCE = Path(__file__).with_name("verifier_zygote.py")
READY_TIMEOUT_SEC = 120.0  # importing pytest and its plugins; a slow disk can take a while
REPLY_TIMEOUT_SEC = 30.0  # a fork, or the reaping of a killed child
# Disk quotas: what one run may write (its copy, HOME, TMPDIR, output), and what a batch may take from the
# file system altogether; a run over either is killed and fails. Checked every DISK_TICK_SEC while runs go
# (the file system's usage first, each run's dirs only when that grew past a run's share).
RUN_QUOTA_BYTES = 1024 * 1024 * 1024
BATCH_QUOTA_BYTES = 3 * 1024 * 1024 * 1024
MIN_FREE_BYTES = 256 * 1024 * 1024
DISK_TICK_SEC = 0.5


def dir_bytes(root: str, stop: int) -> int:
    """Bytes allocated beneath `root` (no link followed), counted until `stop` is passed."""
    total = 0
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames + dirnames:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_blocks * 512
            except OSError:
                continue
        if total > stop:
            break
    return total


def _used(path: str) -> tuple[int, int]:
    """(used, free) bytes of the file system holding `path`."""
    st = os.statvfs(path)
    return (st.f_blocks - st.f_bfree) * st.f_frsize, st.f_bavail * st.f_frsize


@dataclass(slots=True)
class DiskWatch:
    """Which runs of a batch are over their disk quota, judged from their dirs (`roots`, one list a run)."""

    roots: list[list[str]]
    base: int = 0

    def __post_init__(self) -> None:
        self.base = _used(self.roots[0][0])[0] if self.roots and self.roots[0] else 0

    def over(self, running: list[int]) -> list[int]:
        if not self.roots or not self.roots[0]:
            return []
        used, free = _used(self.roots[0][0])
        if used - self.base <= RUN_QUOTA_BYTES and free > MIN_FREE_BYTES:
            return []
        heavy = [i for i in running if sum(dir_bytes(r, RUN_QUOTA_BYTES) for r in self.roots[i]) > RUN_QUOTA_BYTES]
        if heavy:
            return heavy
        return list(running) if used - self.base > BATCH_QUOTA_BYTES or free <= MIN_FREE_BYTES else []


class Via(str, Enum):
    """How a run was started (recorded per variant in reward-details.json)."""

    zygote = "zygote"
    subprocess = "subprocess"


@dataclass(frozen=True, slots=True)
class Launched:
    """How one run ended."""

    returncode: int | None  # None when it timed out or nothing reported it
    timed_out: bool
    seconds: float
    leftovers: int  # processes of the run still present after it was ended
    via: Via
    cpu: float | None = None  # CPU seconds the run used (user + system), when the zygote measured them
    over_quota: bool = False  # killed for writing more than its share of the disk (a failing run)


class ZygoteLost(Exception):
    """The zygote died or stopped answering; the message says how. `ran`: a child had been forked for
    the job (its run happened, with no result), so the job must not simply be started again."""

    def __init__(self, message: str, *, ran: bool = False):
        super().__init__(message)
        self.ran = ran


# --------------------------------------------------------------------------- sessions

def _session_members(sid: int) -> dict[int, str]:
    """{pid: state} of every process in the run's process group or session."""
    members = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            raw = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = raw.rsplit(")", 1)[-1].split()
        if len(fields) > 3 and sid in (int(fields[2]), int(fields[3])):
            members[int(entry)] = fields[0]
    return members


def end_session(sid: int, grace: float = 3.0) -> int:
    """SIGKILL what is left of a run (its process group and session), reap what we can, and wait until it is
    gone: dying or zombie processes still count against RLIMIT_NPROC and show in /proc, so a later run could
    read them as state. Returns how many remained after `grace` seconds (zombies a non-reaping init holds)."""
    _kill_group(sid)
    try:
        os.killpg(sid, 0)
    except ProcessLookupError:
        # Nothing left in the group, zombies included: a run cannot fork (seccomp), so nothing of it is in
        # another group of its session either (without seccomp, `Runner.end` still kills every process of
        # the run uids). The common case, without a scan of /proc (~20 ms a run).
        return 0
    except PermissionError:
        pass
    deadline = time.monotonic() + grace
    while True:
        members = _session_members(sid)
        for pid, state in members.items():
            if state != "Z":
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            try:  # ours to reap when we are their parent or, as a child subreaper, inherited them
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
        if not members or time.monotonic() > deadline:
            return len(members)
        time.sleep(0.02)


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def become_subreaper() -> bool:
    """Make this process the reaper of orphaned descendants (Linux prctl), so a fork bomb's leftovers are
    reaped here even when the container's init never reaps. Only for the verifier run as a script: a host
    process calling `score()` keeps its own semantics."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


# --------------------------------------------------------------------------- the zygote

def zygote_command(python: str, mode: str, *args: str) -> list[str]:
    """`python -c <verifier_zygote source> mode args…`: the source travels in argv, so the run uid never
    needs to read the tests dir."""
    return [python, "-c", ZYGOTE_SOURCE.read_text(encoding="utf-8"), mode, *args]


def request_line(jobs: list[dict]) -> bytes:
    """One batch for the zygote. Key order is fixed, so equal jobs are equal bytes."""
    return (json.dumps({"op": "batch", "jobs": jobs}, sort_keys=True) + "\n").encode()


@dataclass(slots=True)
class Zygote:
    """The verifier's end of a running zygote (see `verifier_zygote`)."""

    proc: subprocess.Popen
    err_log: Path
    pending: bytes = b""
    ready: bool = False
    probe_status: int | None = None  # wait status of the start-up probe child, when one was asked for
    native: dict | None = None  # what the zygote mapped before any run (verifier_native.load_allowed)

    @classmethod
    def start(cls, python: str, cwd: Path, env: dict[str, str], err_log: Path, probe: dict | None) -> "Zygote":
        args = [] if probe is None else [json.dumps(probe, sort_keys=True)]
        with open(err_log, "wb") as err:
            proc = subprocess.Popen(zygote_command(python, "serve", *args), cwd=cwd, env=env, stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=err, start_new_session=True)
        return cls(proc, err_log)

    def _reply(self, deadline: float) -> dict | None:
        """The next reply line; None on timeout. ZygoteLost on EOF or garbage."""
        fd = self.proc.stdout.fileno()  # type: ignore[union-attr]
        while b"\n" not in self.pending:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                raise ZygoteLost(f"the zygote exited: {self._err_tail()}")
            self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        try:
            reply = json.loads(line)
        except ValueError:
            raise ZygoteLost(f"the zygote said {line[:200]!r}") from None
        if not isinstance(reply, dict):
            raise ZygoteLost(f"the zygote said {line[:200]!r}")
        return reply

    def _err_tail(self) -> str:
        try:
            lines = self.err_log.read_text(encoding="utf-8", errors="replace").strip().splitlines()
        except OSError:
            lines = []
        return lines[-1] if lines else f"exit code {self.proc.poll()}"

    def wait_ready(self, timeout: float = READY_TIMEOUT_SEC) -> None:
        """Block until the zygote has warmed up; ZygoteLost when it cannot."""
        if self.ready:
            return
        reply = self._reply(time.monotonic() + timeout)
        if reply is None or not reply.get("ready"):
            raise ZygoteLost("the zygote did not get ready" if reply is None else f"the zygote said {reply}")
        probe = reply.get("probe")
        self.probe_status = probe if isinstance(probe, int) else None
        self.native = reply.get("native") if isinstance(reply.get("native"), dict) else None
        self.ready = True

    def launch_batch(self, jobs: list[dict], timeout: float) -> list[Launched]:
        """Fork one run per job, released together; wait for all, killing each run's session at its wall
        clock (counted from the release) or when it is over its disk quota."""
        self.wait_ready()
        try:
            self.proc.stdin.write(request_line(jobs))  # type: ignore[union-attr]
            self.proc.stdin.flush()  # type: ignore[union-attr]
        except OSError as exc:
            raise ZygoteLost(f"the zygote stopped reading: {exc}") from None
        started = self._reply(time.monotonic() + REPLY_TIMEOUT_SEC)
        pids = started.get("pids") if started else None
        if not isinstance(pids, list) or len(pids) != len(jobs) or not all(isinstance(p, int) for p in pids):
            raise ZygoteLost(f"the zygote did not fork: {started}")
        start = time.monotonic()
        ends: dict[int, tuple[int | None, float, float | None]] = {}
        timed_out: set[int] = set()
        over_quota: set[int] = set()
        watch = DiskWatch([list(job.get("landlock", {}).get("write", [])) for job in jobs])
        try:
            while len(ends) < len(pids):
                done = self._reply(min(start + timeout, time.monotonic() + DISK_TICK_SEC))
                if done is None and time.monotonic() < start + timeout:
                    running = [i for i, pid in enumerate(pids) if pid not in ends and pid not in over_quota]
                    for i in watch.over(running):
                        over_quota.add(pids[i])
                        _kill_group(pids[i])
                    continue
                if done is None:  # the wall clock: every run still going is killed
                    for pid in pids:
                        if pid not in ends:
                            timed_out.add(pid)
                            _kill_group(pid)
                    done = self._reply(time.monotonic() + REPLY_TIMEOUT_SEC)
                    if done is None:
                        raise ZygoteLost("no exit status from the zygote after a kill", ran=True)
                if done.get("pid") not in pids or not isinstance(done.get("status"), int):
                    raise ZygoteLost(f"the zygote said {done}", ran=True)
                cpu = done.get("cpu")
                ends[done["pid"]] = (done["status"], time.monotonic() - start,
                                     float(cpu) if isinstance(cpu, (int, float)) else None)
        except ZygoteLost as lost:
            for pid in pids:
                end_session(pid)
            lost.ran = True
            raise
        results = []
        for pid in pids:
            status, seconds, cpu = ends[pid]
            code = None if pid in timed_out or status is None else os.waitstatus_to_exitcode(status)
            results.append(Launched(code, pid in timed_out, seconds, end_session(pid), Via.zygote, cpu,
                                    over_quota=pid in over_quota))
        return results

    def close(self) -> None:
        """Stop the zygote (it holds nothing worth a graceful exit)."""
        for pipe in (self.proc.stdin, self.proc.stdout):
            try:
                pipe.close()  # type: ignore[union-attr]
            except OSError:
                pass
        self.proc.kill()
        self.proc.wait()


# --------------------------------------------------------------------------- the fallback

def launch_subprocesses(python: str, jobs: list[dict], *, cwd: Path, env: dict[str, str], logs: list[Path],
                        timeout: float) -> list[Launched]:
    """Run each job in a fresh interpreter (same child code as the zygote's), each its own session,
    released together: every run reads its job line from stdin, then waits for EOF there once it is set up."""
    procs, files = [], []
    try:
        for job, log in zip(jobs, logs):
            out = open(log, "wb")
            files.append(out)
            # The job goes on stdin, never in argv: argv stays readable in the run (sys.orig_argv, main's
            # frame), and the job carries the coverage key (red team round 3).
            proc = subprocess.Popen(zygote_command(python, "once", "-"), cwd=cwd, env=env, stdin=subprocess.PIPE,
                                    stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
            procs.append(proc)
            try:
                proc.stdin.write((json.dumps(job, sort_keys=True) + "\n").encode())  # type: ignore[union-attr]
                proc.stdin.flush()  # type: ignore[union-attr]
            except BrokenPipeError:  # it died starting: its run fails like any other that dies
                pass
        start = time.monotonic()
        for proc in procs:
            proc.stdin.close()  # type: ignore[union-attr]
        ends: list[tuple[int | None, bool, float]] = []
        for proc in procs:
            try:
                proc.wait(timeout=max(0.0, start + timeout - time.monotonic()))
                ends.append((proc.returncode, False, time.monotonic() - start))
            except subprocess.TimeoutExpired:
                ends.append((None, True, time.monotonic() - start))
    finally:
        for proc in procs:
            _kill_group(proc.pid)
            proc.wait()
        for out in files:
            out.close()
    return [Launched(code, timed, seconds, end_session(proc.pid), Via.subprocess)
            for proc, (code, timed, seconds) in zip(procs, ends)]


def launch_probe(python: str, job: dict, *, cwd: Path, env: dict[str, str], log: Path, timeout: float) -> int | None:
    """Exit code of the probe job in a fresh interpreter; None on timeout."""
    with open(log, "wb") as out:
        proc = subprocess.Popen(zygote_command(python, "probe", json.dumps(job, sort_keys=True)), cwd=cwd, env=env,
                                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            return proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        finally:
            _kill_group(proc.pid)
            proc.wait()
            end_session(proc.pid)


# --------------------------------------------------------------------------- choosing

@dataclass(slots=True)
class Launcher:
    """Runs jobs through the zygote while it works, and through fresh subprocesses otherwise."""

    python: str
    cwd: Path  # the boot dir: root-owned, holds only the verifier's own files
    env: dict[str, str]  # the runs' clean environment, before the job adds the import roots
    logs: Path  # root-only: the zygote's own log
    zygote: Zygote | None = None
    note: str = ""  # why runs went (or go) through subprocesses

    def start_zygote(self, probe: dict | None) -> None:
        """Start the zygote; `probe` (a job) asks it to probe the run uid while it warms up."""
        try:
            self.zygote = Zygote.start(self.python, self.cwd, self.env, self.logs / "zygote.err", probe)
        except OSError as exc:
            self.note = f"the zygote did not start: {type(exc).__name__}: {exc}"

    def _lose_zygote(self, lost: ZygoteLost) -> None:
        self.note = str(lost)
        if self.zygote is not None:
            self.zygote.close()
        self.zygote = None

    def probe(self, job: dict, *, log: Path, timeout: float) -> int | None:
        """Exit code of the probe `job` (the zygote's start-up probe when it ran one); None on timeout."""
        if self.zygote is not None:
            try:
                self.zygote.wait_ready()
                if self.zygote.probe_status is not None:
                    return os.waitstatus_to_exitcode(self.zygote.probe_status)
            except ZygoteLost as lost:
                self._lose_zygote(lost)
        return launch_probe(self.python, job, cwd=self.cwd, env=self.env, log=log, timeout=timeout)

    @property
    def via(self) -> Via:
        return Via.zygote if self.zygote is not None else Via.subprocess

    def launch(self, jobs: list[dict], *, logs: list[Path], timeout: float) -> list[Launched]:
        """Run `jobs` together through the zygote, or through subprocesses once there is none."""
        if self.zygote is not None:
            start = time.monotonic()
            try:
                return self.zygote.launch_batch(jobs, timeout)
            except ZygoteLost as lost:
                self._lose_zygote(lost)
                if lost.ran:  # the runs happened and gave nothing: no second attempt on used copies
                    return [Launched(None, False, time.monotonic() - start, 0, Via.zygote) for _ in jobs]
        return launch_subprocesses(self.python, jobs, cwd=self.cwd, env=self.env, logs=logs, timeout=timeout)

    def close(self) -> None:
        """Stop the zygote, if one is running."""
        if self.zygote is not None:
            self.zygote.close()
            self.zygote = None

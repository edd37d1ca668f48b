"""The parent's side: fork a child per job (at most `workers` at once), watch them against their time
limits and collect one verdict line each.

A sibling of `gate_worker.py` (see its docstring for the why), shipped with it; stdlib + pytest only.
"""

import json
import os
import select
import shutil
import signal
import time

from gate_swap import compile_originals
from gate_judge import child_main, judge_live


class Running:
    def __init__(self, job, pid, fd, slot, started):
        self.job, self.pid, self.fd, self.slot, self.started = job, pid, fd, slot, started
        self.data = b""
        self.exit = None


def _read_available(run):
    while True:
        try:
            chunk = os.read(run.fd, 65536)
        except BlockingIOError:
            return False
        if not chunk:
            return True
        run.data += chunk


def _kill(pid):
    for kill in (os.killpg, os.kill):
        try:
            kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _log_tail(path, limit=600):
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - limit))
            return handle.read().decode("utf-8", "replace").strip()
    except OSError:
        return ""


def _finish(run, timed_out, scratch):
    duration = time.monotonic() - run.started
    log_path = os.path.join(scratch, f"slot{run.slot}.log")
    if timed_out:
        result = {"status": "timeout", "failing": list(run.job["tests"]), "detail": "timed out", "mode": None}
    else:
        try:
            result = json.loads(run.data.decode("utf-8", "replace").strip().splitlines()[-1])
        except (ValueError, IndexError):
            result = {"status": "error", "detail": f"child exited with status {run.exit} and no verdict: "
                                                   f"{_log_tail(log_path)}"}
    result.setdefault("failing", [])
    result.setdefault("mode", None)
    result.setdefault("detail", "")
    result.update(id=run.job["id"], duration=round(duration, 4))
    shutil.rmtree(os.path.join(scratch, f"bt{run.slot}"), ignore_errors=True)
    return result


def run_jobs(spec, jobs, judge_job, emit):
    """Fork up to `workers` children at a time, each giving `judge_job(job, basetemp)`; each job's result
    goes to `emit` as soon as it is known."""
    scratch = spec["basetemp"]
    pending = list(jobs)
    running = {}
    free_slots = list(range(max(1, int(spec.get("workers", 1)))))
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake_w)

    def stop(signum, frame):
        for run in running.values():
            _kill(run.pid)
        os._exit(128 + signum)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, stop)
    while pending or running:
        while pending and free_slots:
            job, slot = pending.pop(0), free_slots.pop(0)
            read_fd, write_fd = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(read_fd)
                os.close(wake_r)
                basetemp = os.path.join(scratch, f"bt{slot}")
                child_main(job, lambda j: judge_job(j, basetemp), os.path.join(scratch, f"slot{slot}.log"),
                           write_fd)
            os.close(write_fd)
            try:
                os.setpgid(pid, pid)  # also done by the child; whichever runs first closes the race
            except OSError:
                pass
            os.set_blocking(read_fd, False)
            running[pid] = Running(job, pid, read_fd, slot, time.monotonic())
        now = time.monotonic()
        deadline = min(r.started + float(r.job["timeout_sec"]) for r in running.values())
        ready, _, _ = select.select([wake_r, *(r.fd for r in running.values())], [], [], max(0.0, deadline - now))
        for run in running.values():
            if run.fd in ready:
                _read_available(run)
        if wake_r in ready:
            try:
                while os.read(wake_r, 4096):
                    pass
            except BlockingIOError:
                pass
        done = []
        for pid, run in running.items():
            try:
                reaped, status = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                reaped, status = pid, 0
            if reaped:
                # The verdict was written before the child exited; a grandchild that inherited the pipe
                # must not make us wait for EOF.
                _read_available(run)
                run.exit = os.waitstatus_to_exitcode(status)
                done.append((run, False))
            elif time.monotonic() >= run.started + float(run.job["timeout_sec"]):
                _kill(pid)
                os.waitpid(pid, 0)
                done.append((run, True))
        for run, timed_out in done:
            del running[run.pid]
            _kill(run.pid)  # the child's process group: whatever its tests left running
            os.close(run.fd)
            free_slots.append(run.slot)
            emit(_finish(run, timed_out, scratch))
    signal.set_wakeup_fd(-1)  # the caller may run another batch of children (or go on with pytest)
    os.close(wake_r)
    os.close(wake_w)


def run_in_session(spec, warm, session, recorder, emit):
    """Inside the warm-up's pytest run: judge in children of this process the jobs whose tests it
    collected; returns the jobs left (import checks, tests not collected, mutants a swap cannot put in)."""
    exitfirst = bool(spec.get("exitfirst", False))
    collected = {item.nodeid for item in session.items}
    left, live = [], []
    for job in spec["jobs"]:
        (live if job["tests"] and collected.issuperset(job["tests"]) else left).append(job)
    by_id = {job["id"]: job for job in live}
    compile_originals(warm, live)

    def emit_or_retry(result):
        if result["status"] == "retry":  # before any of its tests ran: judged after pytest finished
            left.append(by_id[result["id"]])
        else:
            emit(result)

    run_jobs(spec, live, lambda job, basetemp: judge_live(job, warm, basetemp, exitfirst, session, recorder),
             emit_or_retry)
    return left


"""The test-run side of the verifier: a warm "zygote" that forks one child per run, and the child itself.

A pytest process spends most of a short run starting up (the interpreter, importing pytest, its plugins
and coverage). The verifier therefore starts this file once, as

    python -c SOURCE serve          (cwd: the verifier's root-owned boot dir, the runs' clean environment)

before it reads any grading material, so the zygote's memory never holds the config, the diffs or
which variant is which. The zygote imports pytest, pytest's built-in plugins and what every run imports
lazily — never the repository or the submission — freezes that heap out of the garbage
collector's reach, and serves requests on stdin, one JSON line each, answering on stdout:

    → {"op": "run" | "probe", "job": {...}}       ← {"pid": N}   then   ← {"pid": N, "status": <wait status>}

When the verifier runs as root it also passes a probe job: a first child, forked before the imports,
checks that the run uid can read pytest and coverage, and the ready line carries its exit status.
For each request it forks a fresh parent for the run, in a session of its own, which forks the run
and waits for it: process ids are handed out in order, so a run forked by the zygote itself could count
the runs before it from `getpid() - getppid()` (or from its session's id); with a fresh parent that
difference is the same in every run. The run, not the zygote, does everything run-specific: a new session, output to the run log, the privilege drop, rlimits, the copy as cwd, the
run's environment and `sys.path`, coverage (when the verifier asked for it), then `python -m pytest`'s
own code path (`runpy`), and the end of an interpreter's shutdown that a run can notice (threads joined,
atexit callbacks, output flushed). Every request's job is the same bytes for every
variant: the only per-run difference, whether to measure coverage, is a root-owned file in the boot dir
that the verifier writes for the A run alone, so no child can learn from the zygote which variants ran
before it. Children run one at a time; the verifier owns the wall clock and kills a child's session.

`python -c SOURCE once JOB` and `... probe JOB` run the same child steps in a fresh process without the
fork: the verifier's subprocess fallback when the zygote cannot start.

Stdlib at import (pytest is imported by `warm`, coverage by the child that measures). Copied verbatim into
every task; the verifier passes the source with `-c`, so nothing of it needs to be readable by the run uid.
"""

import json
import os
import sys

# Imported once in the zygote: pytest's built-in plugins are added from `_pytest.config.default_plugins`;
# these are what every run imports besides (the debugging plugin's pdb and readline, faulthandler …) and
# what the children themselves use. The warm-up is the longest step before the first run, so nothing
# that only some runs import: not asyncio (~12 ms, a test's own import), not coverage (~35 ms with its
# set-up; only the A run of a task with coverage targets is traced, and that child imports it itself).
# A name missing from this interpreter is skipped.
WARM_MODULES = (
    "pytest", "_pytest.config", "_pytest._argcomplete", "pdb", "readline", "faulthandler",
    "xml.etree.ElementTree", "runpy", "random", "tempfile", "importlib", "importlib.util", "resource", "ctypes",
)
# The run uid must be able to read these for the runs to work without privileges (the probe).
PROBE_MODULES = ("pytest", "_pytest", "pluggy", "coverage")
COVERAGE_WARNINGS_OFF = ["no-data-collected", "module-not-measured", "module-not-imported"]
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4


def _send(fd, message):
    data = (json.dumps(message) + "\n").encode()
    while data:
        data = data[os.write(fd, data):]


def _prctl(option, value):
    """Linux prctl through libc; False when unavailable."""
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def warm():
    """Import what every run needs, then move it all out of the garbage collector's generations: each
    child's collections (pytest runs several) then walk only what the child itself allocated."""
    import gc
    import importlib

    gc.disable()  # nothing imported here is garbage; collections would only slow the imports down
    import _pytest.config

    for name in (*WARM_MODULES, *(f"_pytest.{plugin}" for plugin in _pytest.config.default_plugins)):
        try:
            importlib.import_module(name)
        except Exception:  # e.g. no readline in this build: the runs import what exists
            pass
    gc.freeze()
    gc.enable()


def _read_requests():
    """Request lines from stdin, read unbuffered so that a child inherits no half-read input."""
    pending = b""
    while True:
        chunk = os.read(0, 65536)
        if not chunk:
            return
        pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            if line.strip():
                yield json.loads(line)


def serve(probe_job=None):
    """The zygote's loop. Returns the request only in a forked child; the zygote itself exits on EOF.

    With `probe_job`, a probe child is forked first and runs while the zygote warms up; the ready line
    carries its wait status."""
    _prctl(PR_SET_PDEATHSIG, 9)  # SIGKILL when the verifier dies: no zygote outlives its grading
    replies = os.dup(1)
    os.dup2(2, 1)  # whatever an import prints goes to the zygote's log, never into the replies
    probe_pid = None
    if probe_job is not None:
        probe_pid = os.fork()
        if probe_pid == 0:
            return {"op": "probe", "job": probe_job}
    warm()
    probe_status = None if probe_pid is None else os.waitpid(probe_pid, 0)[1]
    _send(replies, {"ready": True, "pid": os.getpid(), "probe": probe_status})
    for request in _read_requests():
        parent = os.fork()
        if parent == 0:
            os.setsid()
            pid = os.fork()
            if pid == 0:
                return request
            _send(replies, {"pid": pid})
            _, status = os.waitpid(pid, 0)
            _send(replies, {"pid": pid, "status": status})
            os._exit(0)
        os.waitpid(parent, 0)
    os._exit(0)


# --------------------------------------------------------------------------- the child

def _set_limits(limits):
    import resource

    for name, value in limits.items():
        key = getattr(resource, "RLIMIT_" + name)
        _, hard = resource.getrlimit(key)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(key, (value, value))


def enter(job, *, forked):
    """Become the run: session, output, uid, limits, cwd, environment and import path of the job."""
    if forked:
        os.setsid()
        out = os.open(job["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out, 1)
        os.dup2(out, 2)
        os.closerange(3, 1 << 16)  # the zygote's other descriptors; Python closes via close_range
    owner = job["owner"]
    if owner is not None:
        os.setgroups([])
        os.setgid(owner[1])
        os.setuid(owner[0])
        # Changing uid makes a process non-dumpable (its /proc entries root's); an exec'd run is dumpable,
        # so restore that: the run then sees /proc/self exactly as a fresh `python -m pytest` would.
        _prctl(PR_SET_DUMPABLE, 1)
    _set_limits(job["limits"])
    os.chdir(job["cwd"])
    os.environ.clear()
    os.environ.update(job["env"])
    # `python -m pytest` in the copy with PYTHONPATH=boot:roots: [copy, boot, roots…, stdlib, site…].
    # The zygote's import caches stay: they describe the same directories (a finder re-reads a directory
    # whose mtime changed), and the copy's directories are new to them.
    head = job["path_head"]
    sys.path[:] = head + [p for p in sys.path if p and p not in head]
    import random
    import tempfile

    tempfile.tempdir = None  # recomputed from this run's TMPDIR
    random.seed(0)  # what the boot sitecustomize does in a fresh process


def _coverage_target(job):
    """The file to measure, when the verifier asked for coverage on this run (a root-owned file)."""
    try:
        with open(job["coverage_request"], encoding="utf-8") as fh:
            return json.load(fh)["target"]
    except FileNotFoundError:
        return None


def _write_covered(cov, target, path):
    data = cov.get_data()
    wanted = os.path.realpath(target)
    lines = []
    for measured in data.measured_files():
        if os.path.realpath(measured) == wanted:
            lines = sorted(data.lines(measured) or [])
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(lines, fh)


class _TraceFromTargetImport:
    """A meta path finder that finds nothing: the first import of a module named like the target file
    starts coverage. pytest's own start-up (configuration, plugins, the session) is most of a short run,
    and tracing it doubled the A run; the target's lines run only after its module is imported. A
    conftest importing it early just starts tracing early. Stays in `sys.meta_path`, inert, once done
    (removing it while the import system iterates that list would skip the next finder)."""

    def __init__(self, cov, target):
        self.cov = cov
        name = os.path.basename(target)[:-3]
        self.name = os.path.basename(os.path.dirname(target)) if name == "__init__" else name
        self.started = False

    def find_spec(self, fullname, path=None, target=None):
        if not self.started and fullname.rpartition(".")[2] == self.name:
            self.started = True
            self.cov.start()
        return None


def run(job):
    """pytest as `python -m pytest` (or `coverage run -m pytest`) runs it; raises its SystemExit."""
    import runpy

    target = _coverage_target(job)
    cov = None
    if target is not None:
        import coverage

        cov = coverage.Coverage(data_file=None, config_file=False, include=[target])
        cov.set_option("run:disable_warnings", COVERAGE_WARNINGS_OFF)
        # Set the tracer up here, where the stack is short (coverage records the stack it starts from),
        # and start tracing for real at the target's import.
        cov.start()
        cov.stop()
        sys.meta_path.insert(0, _TraceFromTargetImport(cov, target))
    sys.argv[1:] = job["argv"]
    try:
        runpy.run_module("pytest", run_name="__main__", alter_sys=True)
    finally:
        if cov is not None:
            cov.stop()
            _write_covered(cov, target, job["covered"])


def probe():
    """Exit 0 when this uid can use the interpreter with pytest and coverage; else say why."""
    import importlib.util

    try:
        for name in PROBE_MODULES:
            spec = importlib.util.find_spec(name)
            if spec is None or spec.origin is None:
                raise ImportError(f"no module named {name}")
            open(spec.origin, "rb").close()
        if not os.access(sys.executable, os.X_OK):
            raise PermissionError(f"cannot execute {sys.executable}")
    except Exception as exc:
        print(f"{type(exc).__name__}: {exc}", flush=True)
        return 1
    return 0


def _exit_code(exc):
    """The process exit code the interpreter would give for an uncaught SystemExit."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    print(exc.code, file=sys.stderr)
    return 1


def finish(code):
    """End the run as the interpreter's own shutdown would, minus tearing down every module (tens of
    milliseconds a run): wait for non-daemon threads (a run whose thread never ends hits the wall
    clock, as a plain pytest process would), run the atexit callbacks, flush the output, exit."""
    import atexit
    import threading

    try:
        getattr(threading, "_shutdown", lambda: None)()
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
    except BaseException:
        code = code or 120  # what the interpreter returns when flushing its output fails
    os._exit(code)


def main(argv):
    """`serve [PROBE_JOB]`, or `once JOB` / `probe JOB` in a fresh process; never returns in a run."""
    # `-c` puts the cwd (the root-owned boot dir) first on sys.path; the child puts the copy there instead.
    if sys.path and sys.path[0] == "":
        del sys.path[0]
    if argv[0] == "serve":
        request, forked = serve(json.loads(argv[1]) if len(argv) > 1 else None), True
    else:
        request, forked = {"op": "run" if argv[0] == "once" else "probe", "job": json.loads(argv[1])}, False
    enter(request["job"], forked=forked)
    if request["op"] == "probe":
        code = probe()
        if forked:  # nothing of a run to finish: skip the interpreter's shutdown
            os._exit(code)
        return code
    try:
        run(request["job"])
        code = 0
    except SystemExit as exc:
        code = _exit_code(exc)
    except BaseException:  # pytest itself broke: the traceback goes to the run log, as it would
        sys.excepthook(*sys.exc_info())
        code = 1
    finish(code)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

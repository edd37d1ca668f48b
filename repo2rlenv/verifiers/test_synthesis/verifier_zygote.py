"""The test-run side of the verifier: a warm "zygote" that forks the runs, and what each run does.

A pytest process spends most of a short run starting up (the interpreter, pytest and its plugins). The
verifier therefore starts this file once, as

    python -c SOURCE serve          (cwd: the verifier's root-owned boot dir, the runs' clean environment)

before it reads any grading material, so the zygote's memory never holds the config, the diffs or
which variant is which. It imports pytest, its built-in plugins, this run's guard and outcome plugin
(from the boot dir) — never the repository or the submission — freezes that heap out of the garbage
collector's reach, and serves requests on stdin, one JSON line each, answering on stdout:

    → {"op": "batch", "jobs": [job, …]}     ← {"pids": [p, …]}    ← {"pid": p, "status": s, "cpu": c}  per run, as it ends

A batch's runs are forked together; each sets itself up (session, output, privileges, limits, copy,
environment, guard, Landlock and seccomp), says it is ready, and waits: the zygote releases them all at
once, when every one is ready. Runs of one batch therefore start together, and nothing but their
copies' contents (and random paths) tells them apart; the verifier owns their wall clocks and kills a
run's session when it is up.

When the verifier runs as root it also passes a probe job: a first child, forked before the imports,
checks that the run uid can read pytest, and the ready line carries its exit status.

`python -c SOURCE once JOB` and `... probe JOB` run the same child steps in a fresh process without the
fork: the verifier's subprocess fallback (stdin is then the release: the run starts at its EOF).

Stdlib at import; copied verbatim into every task; the verifier passes the source with `-c`.
"""

import sys

# C accelerators with a pure-Python twin in the standard library, kept out of every run before anything
# imports them (json is imported just below): readline reads files below the audit hook and cannot be
# neutralised once loaded (verifier_guard); ElementTree's C Element frees children its find and remove still
# hold when the test's __eq__ clears the parent (CPython gh-126033, gh-126037, both images); _json's encoder
# uses an item it does not hold when a Python key encoder empties the list (gh-142831, 3.13.5); _asyncio's
# Future reads its callbacks' count before an event loop of the test's changes them (gh-125969, 3.11.2).
# The pure-Python modules behave the same (slower); `_imp` refuses creating these again
# (verifier_kernel.harden_memory).
KEPT_OUT = ("readline", "_elementtree", "_json", "_asyncio")
for _name in KEPT_OUT:
    sys.modules[_name] = None

import json  # noqa: E402
import os  # noqa: E402
import select  # noqa: E402

# Imported once in the zygote: pytest's built-in plugins are added from `_pytest.config.default_plugins`;
# these are what every run imports besides, and what the children use; asyncio (~15 ms) too, which many
# libraries import and which nine runs would otherwise import nine times; what the guard's readers and
# recorder use. A name missing from this interpreter is skipped.
WARM_MODULES = (
    "pytest", "_pytest.config", "_pytest._argcomplete", "pdb", "faulthandler", "runpy", "random", "tempfile", "asyncio",
    "importlib", "importlib.util", "resource", "logging", "inspect", "signal", "json", "traceback",
    "hashlib", "threading", "linecache", "doctest", "dis",
    "verifier_guard", "verifier_kernel", "verifier_native", "verifier_outcomes",
)
# The run uid must be able to read these for the runs to work without privileges (the probe).
PROBE_MODULES = ("pytest", "_pytest", "pluggy")
READY_WAIT_SEC = 60.0  # a run that never gets ready (it died setting up) does not hold the others forever
NATIVE = {}  # what `warm` mapped: the native inventory's summary, reported on the ready line


def _send(fd, message):
    data = (json.dumps(message) + "\n").encode()
    while data:
        data = data[os.write(fd, data):]


def _kernel(call, *args):
    """One prctl through the verifier's door to the kernel (`verifier_kernel.calls`: never ctypes when the
    extension is there, so no run inherits `_ctypes`); False when unavailable."""
    try:
        import verifier_kernel

        getattr(verifier_kernel.calls(), call)(*args)
        return True
    except (ImportError, OSError, AttributeError):
        return False


def warm(rehearsal=False):
    """Import what every run needs (and, in the zygote, `rehearse` a session), then move it all out of the
    garbage collector's generations: each child's collections (pytest runs several) then walk only what
    the child itself allocated."""
    import gc
    import importlib

    gc.disable()  # nothing imported here is garbage; collections would only slow the imports down
    import _pytest.config

    for name in (*WARM_MODULES, *(f"_pytest.{plugin}" for plugin in _pytest.config.default_plugins)):
        try:
            importlib.import_module(name)
        except Exception:  # e.g. no readline in this build: the runs import what exists
            pass
    # Every native library a run may execute is mapped now, before any run forks: after its barrier a
    # run cannot map new executable memory (verifier_native, verifier_kernel).
    import verifier_native

    rehearsed = set()
    if rehearsal:
        loaded = _extension_files(verifier_native.suffixes())
        rehearse()
        rehearsed = _extension_files(verifier_native.suffixes()) - loaded
    NATIVE.update(verifier_native.load_allowed())
    import verifier_kernel

    NATIVE["hardened"] = verifier_kernel.harden_memory()
    if rehearsed:
        # The rehearsal runs pytest's own code only (no plugin is autoloaded or named), which imports no
        # extension module the allowlist refuses; if one did, every run would inherit it loaded: no zygote.
        barred = sorted(f for f in rehearsed
                        if os.path.realpath(f) in {**NATIVE.get("refused", {}), **NATIVE.get("unknown", {})})
        if barred:
            raise SystemExit(f"the rehearsal loaded extension modules the allowlist refuses: {barred}")
    gc.freeze()
    gc.enable()
    # Last: what the zygote allocated so far stays where it is; everything after, the runs included, comes
    # from the one-time heap.
    NATIVE["heap"] = verifier_kernel.one_time_heap()
    if NATIVE["heap"]:
        NATIVE["hardened"].append("one-time heap")


def _extension_files(suffixes):
    return {f for f in (getattr(m, "__file__", None) for m in list(sys.modules.values()))
            if isinstance(f, str) and f.endswith(suffixes)}


# The rehearsal's cases: one passes, one fails with an assertion pytest explains (a B′ run's usual end).
REHEARSAL = (
    "def test_passes():\n    assert [1, 2] == [1, 2]\n\n\n"
    "def test_fails():\n    got = {'a': 1}\n    assert got == {'a': 2}, 'explained'\n"
)


def rehearse():
    """One pytest session, before any run forks, over a passing and a failing case in a scratch dir of
    its own: what pytest builds lazily on its first session — the modules it imports late, its compiled
    regular expressions, inspect's map from files to modules (which a failure report's source lookup
    walks over every module, resolving each path), the assertion explainer — is then built once here
    instead of once in every run (measured with pytest.main forked from a warm process, CPU-s a run:
    failing 0.045 → 0.024, passing 0.031 → 0.023). It holds nothing of a grading: the zygote has no config, copy
    or submission yet, and every run inherits the same. What the session leaves is undone: its test
    module, the import path and finders, the environment, warnings filters, the standard streams. A
    rehearsal that fails (an old pytest's options) only leaves the runs to build all that themselves."""
    import shutil
    import tempfile
    import warnings

    import pytest

    scratch = tempfile.mkdtemp(prefix="rehearsal-")
    saved = (list(sys.path), list(sys.meta_path), list(sys.path_hooks), dict(os.environ), list(warnings.filters),
             sys.stdout, sys.stderr, sys.dont_write_bytecode, set(sys.modules))
    out = os.dup(1)
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        sys.dont_write_bytecode = True
        os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # pytest's own plugins only (the zygote's env has it)
        test = os.path.join(scratch, "test_rehearsal.py")
        with open(test, "w", encoding="utf-8") as fh:
            fh.write(REHEARSAL)
        ini = os.path.join(scratch, "pytest.ini")
        with open(ini, "w", encoding="utf-8") as fh:
            fh.write("[pytest]\n")
        os.dup2(null, 1)
        pytest.main([test, "-c", ini, f"--rootdir={scratch}", "-p", "no:cacheprovider", "-q", "--no-header",
                     "--tb=short", "-o", "addopts="])
    except BaseException:  # noqa: BLE001 — a rehearsal is an optimisation; the runs do not depend on it
        pass
    finally:
        # What pytest printed is still in the streams' buffers: written now, to /dev/null, or every run
        # would write it into its own log when it flushes at its end.
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os.dup2(out, 1)
        os.close(out)
        os.close(null)
        (sys.path[:], sys.meta_path[:], sys.path_hooks[:], env, warnings.filters[:], sys.stdout, sys.stderr,
         sys.dont_write_bytecode, modules) = saved
        os.environ.clear()
        os.environ.update(env)
        for name, module in list(sys.modules.items()):  # the test module, and anything imported from scratch
            if name not in modules and str(getattr(module, "__file__", "") or "").startswith(scratch):
                del sys.modules[name]
        for key in [k for k in sys.path_importer_cache if str(k).startswith(scratch)]:
            del sys.path_importer_cache[key]
        import linecache

        for key in [k for k in linecache.cache if str(k).startswith(scratch)]:
            del linecache.cache[key]
        shutil.rmtree(scratch, ignore_errors=True)


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


def _stdin_job():
    """The job line the subprocess fallback writes on stdin (the rest of stdin is the release: EOF)."""
    pending = b""
    while not pending.endswith(b"\n"):
        chunk = os.read(0, 65536)
        if not chunk:
            break
        pending += chunk
    return json.loads(pending)


def _fork_batch(jobs, replies):
    """Fork one child per job; returns (request, release fds) in a child, None in the zygote once every
    child has ended."""
    ready_r, ready_w = os.pipe()
    go_r, go_w = os.pipe()
    pids = []
    for job in jobs:
        pid = os.fork()
        if pid == 0:
            os.close(ready_r)
            os.close(go_w)
            return {"op": "run", "job": job}, (ready_w, go_r)
        pids.append(pid)
    os.close(ready_w)
    os.close(go_r)
    _send(replies, {"pids": pids})
    ready, deadline = 0, READY_WAIT_SEC
    while ready < len(pids):
        readable, _, _ = select.select([ready_r], [], [], deadline)
        if not readable:
            break
        chunk = os.read(ready_r, len(pids))
        if not chunk:  # every child has written, died or exited
            break
        ready += len(chunk)
    os.close(go_w)  # the release: every waiting child reads EOF at once
    os.close(ready_r)
    for _ in pids:
        pid, status, usage = os.wait4(-1, 0)
        _send(replies, {"pid": pid, "status": status, "cpu": round(usage.ru_utime + usage.ru_stime, 4)})
    return None


def serve(probe_job=None):
    """The zygote's loop. Returns (request, release fds) only in a forked child; the zygote exits on EOF.

    With `probe_job`, a probe child is forked first and runs while the zygote warms up; the ready line
    carries its wait status."""
    sys.path.insert(0, os.getcwd())  # the boot dir: the guard, the kernel barrier, the outcome plugin
    _kernel("set_pdeathsig", 9)  # SIGKILL when the verifier dies: no zygote outlives its grading
    replies = os.dup(1)
    os.dup2(2, 1)  # whatever an import prints goes to the zygote's log, never into the replies
    probe_pid = None
    if probe_job is not None:
        probe_pid = os.fork()
        if probe_pid == 0:
            return {"op": "probe", "job": probe_job}, None
    warm(rehearsal=True)
    probe_status = None if probe_pid is None else os.waitpid(probe_pid, 0)[1]
    _send(replies, {"ready": True, "pid": os.getpid(), "probe": probe_status, "native": NATIVE})
    for request in _read_requests():
        child = _fork_batch(request["jobs"], replies)
        if child is not None:
            return child
    os._exit(0)


# --------------------------------------------------------------------------- the child

def _set_limits(limits):
    import resource

    for name, value in limits.items():
        key = getattr(resource, "RLIMIT_" + name)
        if name == "AS":  # the one-time heap's reserve is address space, not memory; it caps its own use
            value += NATIVE.get("heap", 0)
        _, hard = resource.getrlimit(key)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(key, (value, value))


def _close_fds_but(keep):
    """Close every descriptor above 2 but `keep`: the zygote's pipe to the verifier must not reach a run."""
    low = 3
    for fd in sorted(keep):
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, 1 << 16)


def enter(job, *, forked, keep=()):
    """Become the run: session, output, uid, limits, cwd, environment and import path of the job."""
    if forked:
        os.setsid()
        out = os.open(job["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out, 1)
        os.dup2(out, 2)
        _close_fds_but(keep)
    owner = job["owner"]
    if owner is not None:
        os.setgroups([])
        os.setgid(owner[1])
        os.setuid(owner[0])
        # Changing uid makes a process non-dumpable (its /proc entries root's); an exec'd run is dumpable,
        # so restore that: the run then sees /proc/self exactly as a fresh `python -m pytest` would.
        _kernel("set_dumpable", True)
    _set_limits(job["limits"])
    os.chdir(job["cwd"])
    os.environ.clear()
    os.environ.update(job["env"])
    # `python -m pytest` in the copy with PYTHONPATH=boot:roots: [copy, boot, roots…, stdlib, site…].
    head = job["path_head"]
    sys.path[:] = head + [p for p in sys.path if p and p not in head and p != job["boot"]]
    import random
    import tempfile

    tempfile.tempdir = None  # recomputed from this run's TMPDIR
    random.seed(0)  # what the boot sitecustomize does in a fresh process


def _barrier(job, covered_fd=None):
    """The guard (audit hook, readers, seeded entropy) and the kernel barrier; their state goes to
    guard.json, and again with what was sealed once the session starts (`verifier_guard.seal`, from the
    outcome plugin)."""
    import verifier_guard
    import verifier_kernel
    import verifier_native
    import verifier_outcomes

    out = job["out"]
    outcomes = os.open(os.path.join(out, "outcomes.jsonl"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW,
                       0o600)
    refusals = os.open(os.path.join(out, "refusals.log"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW,
                       0o600)
    verifier_outcomes.FD = outcomes
    verifier_outcomes.CASE_TIMEOUT = job.get("case_timeout")
    # The copy's own allowed extension modules (the interpreter's were mapped by the zygote), and the
    # memory primitives the task's target needs, imported (none unless its config names them).
    unmapped = verifier_native.preload(job.get("native", []))
    unmapped.update(verifier_native.import_exposed(job.get("expose", [])))
    kernel = verifier_kernel.apply(job["landlock"]["read"], job["landlock"]["write"])
    policy = dict(job["guard"], landlock=kernel["landlock"])
    if policy.get("cover") is not None:
        policy["cover"]["fd"] = covered_fd
    verifier_guard.install(policy, refusals)  # takes the coverage key out of the job
    kernel["unmapped"] = unmapped
    state_path = os.path.join(out, "guard.json")
    with open(state_path, "w", encoding="utf-8") as fh:
        json.dump(kernel, fh)
    modules = job["guard"].get("modules", [])
    verifier_outcomes.SESSION_START = lambda: _session_start(modules, state_path, kernel)


def _session_start(modules, state_path, kernel):
    """Once pytest is set up, before collection: seal the changed modules (importing the target: its own
    signal handlers are installed then), then refuse new signal handlers (`signals_sealed` in guard.json;
    verifier_kernel.seal_signal_handlers) and every further set-up call of `_r2e_kernel` (`kernel_locked`)."""
    import verifier_guard
    import verifier_kernel

    def handlers():
        kernel["signals_sealed"] = verifier_kernel.seal_signal_handlers()
        # The last set-up call: the test's code runs next (collection).
        kernel["kernel_locked"] = verifier_kernel.lock()
        return kernel["signals_sealed"]

    verifier_guard.seal(modules, state_path, kernel, then=handlers)


def _wait_for_release(fds):
    """Say ready, then block until the zygote releases the batch (EOF on the go pipe, or on stdin for a
    subprocess run)."""
    if fds is None:
        while os.read(0, 4096):
            pass
        return
    ready_w, go_r = fds
    os.write(ready_w, b"r")
    os.close(ready_w)
    while os.read(go_r, 4096):
        pass
    os.close(go_r)


def run(job):
    """pytest as `python -m pytest` runs it; raises its SystemExit. The run's coverage recorder (started
    when the session seals the changed modules) writes its record after the session."""
    import runpy

    sys.argv[1:] = job["argv"]
    try:
        runpy.run_module("pytest", run_name="__main__", alter_sys=True)
    finally:
        if job["guard"].get("cover") is not None:
            sys.audit("repo2rlenv.cover.dump")


def probe():
    """Exit 0 when this uid can use the interpreter with pytest; else say why."""
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
    """`serve [PROBE_JOB]`, or `once JOB|-` / `probe JOB` in a fresh process (`-`: the job line is on stdin);
    never returns in a run."""
    # `-c` puts the cwd (the root-owned boot dir) first on sys.path; the child puts the copy there instead.
    if sys.path and sys.path[0] == "":
        del sys.path[0]
    if argv[0] == "serve":
        (request, release), forked = serve(json.loads(argv[1]) if len(argv) > 1 else None), True
    else:
        job = _stdin_job() if argv[1] == "-" else json.loads(argv[1])
        request, release, forked = {"op": "run" if argv[0] == "once" else "probe", "job": job}, None, False
        sys.path.insert(0, request["job"]["boot"])
        if request["op"] == "run":
            warm()
    job = request["job"]
    enter(job, forked=forked, keep=release or ())
    if request["op"] == "probe":
        code = probe()
        if forked:  # nothing of a run to finish: skip the interpreter's shutdown
            os._exit(code)
        return code
    try:
        covered = None
        if job["guard"].get("cover") is not None:  # opened before the barrier: written after the session
            covered = os.open(os.path.join(job["out"], "covered.json"),
                              os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        _barrier(job, covered)
        del covered
        _wait_for_release(release)
        run(job)
        code = 0
    except SystemExit as exc:
        code = _exit_code(exc)
    except BaseException:  # pytest itself broke: the traceback goes to the run log, as it would
        sys.excepthook(*sys.exc_info())
        code = 1
    finish(code)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

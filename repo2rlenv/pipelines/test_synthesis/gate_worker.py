"""In-sandbox mutant gating worker: imports pytest and the repo once, then forks one child per mutant.

Copied into the sandbox and run once per batch (stdlib + pytest only; never imports repo2rlenv):

    python gate_worker.py --spec SPEC.json --out RESULTS.jsonl

with the work copy of the repo as cwd and its import roots on PYTHONPATH. SPEC holds `rootdir`,
`basetemp` (a scratch dir), `workers` (children at once), `exitfirst` (stop a job's tests at the
first failure) and `jobs`, each
`{id, path, module, qualname, mutated_source, tests, timeout_sec}`. One JSON line per job goes to
RESULTS as soon as it is known: `{id, status, failing, duration, mode, detail}` with status one of
survived | killed | timeout | import_error | error (the child died without a verdict). One summary
line goes to stdout; pytest's own output goes to `basetemp`.

Why this shape: a pytest subprocess per mutant spends most of its time starting pytest (loading plugins,
importing the suite). Here a `--collect-only` warm-up over the union of the jobs' tests loads pytest's
plugins, the conftests, the test modules and the package once; each child then only runs its tests.

The verdict must equal a plain pytest subprocess with the mutated file on disk, so a child puts the
mutant in one of two ways:
- `swap`: replace `__code__` on every live function object whose code is the original's (the module
  attribute alone is not enough: default arguments, aliases, decorator closures and `__wrapped__` keep
  references). The test modules stay imported (their import and assertion rewriting are most of a
  pytest start): allowed only when nothing that ran in the parent could have seen the original's
  behaviour, so that nothing a test module built at import time holds an outcome of the original code:
  the module's import-time code is unchanged (line numbers aside), the changed functions never ran
  during the warm-up (a profiler records what ran: module-level calls, decorators
  applied at import, caches filled at collection), and free variables and the function kind
  (generator, coroutine) are unchanged.
- `fresh`: otherwise, drop every module of the repo and re-import it with the target module's source
  served from memory (nothing is written to the work copy, so no stale bytecode can be picked up).
Either way the mutated source is also what a later import or `importlib.reload` of the module gets, and
what `linecache` (tracebacks, `inspect.getsource`) shows, as with the file on disk.
An import check (GateRunner's) runs only where the tests did not all pass, as in the subprocess gate.
"""

import argparse
import gc
import importlib
import importlib.machinery
import importlib.metadata
import importlib.util
import json
import linecache
import os
import select
import shutil
import signal
import sys
import time
import types

# Function code objects (def, lambda, comprehension) carry both flags; module and class bodies neither.
_FUNCTION_FLAGS = 0x01 | 0x02  # CO_OPTIMIZED | CO_NEWLOCALS
# generator, coroutine, iterable coroutine, async generator: decorators read these when applied.
_KIND_FLAGS = 0x20 | 0x80 | 0x100 | 0x200
_TEST_DIRS = frozenset({"tests", "test", "testing"})
# `--tb=native`: failure reports are never read here, and pytest's default style re-parses source files
# for every traceback entry (over half of a killed mutant's time); outcomes do not depend on it.
_PYTEST_ARGS = ("-p", "no:cacheprovider", "-W", "ignore::pytest.PytestAssertRewriteWarning", "--tb=native")


class NoSwap(Exception):
    """The mutant cannot be swapped in by `__code__`; the child imports the repo afresh instead."""


# --- what the warm-up leaves behind ------------------------------------------------------------------


class WarmupCollector:
    """pytest plugin for the warm-up: records the modules pytest imported as test modules or conftests."""

    def __init__(self):
        self.modules = set()

    def pytest_plugin_registered(self, plugin):
        file = getattr(plugin, "__file__", None) if isinstance(plugin, types.ModuleType) else None
        if file and os.path.basename(file) == "conftest.py":
            self.modules.add(plugin.__name__)

    def pytest_itemcollected(self, item):
        module = getattr(item, "module", None)
        if module is not None:
            self.modules.add(module.__name__)


class Warm:
    """The parent's state after the warm-up, inherited by every child."""

    def __init__(self, root, executed, test_modules, functions):
        self.root = root
        self.executed = executed  # id(code) -> code of every function that ran during the warm-up
        self.test_modules = test_modules  # names to drop so pytest re-imports them
        self.functions = functions  # (co_filename, co_qualname) -> live function objects


def _under(path, root):
    try:
        return os.path.commonpath([os.path.realpath(path), root]) == root
    except ValueError:
        return False


def _looks_like_test(path, root):
    rel = os.path.relpath(os.path.realpath(path), root).split(os.sep)
    name = rel[-1]
    return (bool(_TEST_DIRS.intersection(rel[:-1])) or name == "conftest.py"
            or name.startswith("test_") or name.endswith("_test.py"))


def _code_key(code):
    return code.co_filename, getattr(code, "co_qualname", code.co_name)


class _CachedDistribution(importlib.metadata.Distribution):
    """An installed distribution whose metadata files are read once, in the parent."""

    def __init__(self, dist):
        self._dist, self._texts = dist, {}

    def read_text(self, filename):
        if filename not in self._texts:
            self._texts[filename] = self._dist.read_text(filename)
        return self._texts[filename]

    def locate_file(self, path):
        return self._dist.locate_file(path)


def cache_distributions():
    """Every `pytest.main` scans the installed distributions' metadata (plugin entry points, modules to
    rewrite): a good part of a child's start. Nothing a child does installs a package, so the parent
    reads them once and every child iterates the same cached list."""
    import importlib.metadata as metadata

    original = metadata.distributions
    cached = [_CachedDistribution(d) for d in original()]

    def distributions(**kwargs):
        return iter(cached) if not kwargs else original(**kwargs)

    metadata.distributions = distributions


def warm_up(spec, log):
    """Run the collect-only warm-up under a profiler and index what the children need."""
    import pytest

    root = os.path.realpath(spec["rootdir"])
    tests = sorted({t for job in spec["jobs"] for t in job["tests"]})
    collector = WarmupCollector()
    executed = {}

    def profile(frame, event, arg):
        if event == "call":
            code = frame.f_code
            executed[id(code)] = code

    if tests:
        import threading

        sys.setprofile(profile)
        threading.setprofile(profile)
        try:
            pytest.main(["--collect-only", "-q", f"--rootdir={root}", *_PYTEST_ARGS,
                         f"--basetemp={os.path.join(spec['basetemp'], 'warmup')}", *tests], plugins=[collector])
        except BaseException as exc:  # a broken suite still lets every child report its own verdict
            log.write(f"warm-up raised {type(exc).__name__}: {exc}\n")
        finally:
            sys.setprofile(None)
            threading.setprofile(None)
    targets = {os.path.realpath(os.path.join(root, job["path"])) for job in spec["jobs"]}
    is_target = {}  # co_filename -> bool; realpath costs system calls, and many functions share a file
    functions = {}
    for obj in gc.get_objects():
        if type(obj) is types.FunctionType:
            name = obj.__code__.co_filename
            if name not in is_target:
                is_target[name] = os.path.realpath(name) in targets
            if is_target[name]:
                functions.setdefault(_code_key(obj.__code__), []).append(obj)
    test_modules = set(collector.modules)
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if file and _under(file, root) and _looks_like_test(file, root):
            test_modules.add(name)
    return Warm(root, executed, test_modules, functions)


# --- putting the mutant in -----------------------------------------------------------------------------


def _nested(code):
    return [c for c in code.co_consts if isinstance(c, types.CodeType)]


def _const_key(value):
    """A key equal only for identical constants (`1 == 1.0 == True` and `0.0 == -0.0` must differ)."""
    if isinstance(value, types.CodeType):
        return "<code>"
    if isinstance(value, (tuple, frozenset)):
        keys = (_const_key(v) for v in value)
        return type(value), (tuple(keys) if isinstance(value, tuple) else frozenset(keys))
    if isinstance(value, (float, complex)):
        return type(value), repr(value)
    return type(value), value


def _shape(code):
    """Everything of a code object that decides behaviour, without line numbers and nested code."""
    consts = tuple(_const_key(c) for c in code.co_consts)
    return (code.co_code, consts, code.co_names, code.co_varnames, code.co_freevars, code.co_cellvars,
            code.co_flags, code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount, code.co_name,
            getattr(code, "co_qualname", None), getattr(code, "co_exceptiontable", None))


def _same_modulo_lines(a, b):
    return _shape(a) == _shape(b) and all(_same_modulo_lines(x, y) for x, y in zip(_nested(a), _nested(b)))


def _changed_functions(orig, mut, out):
    """Collect (original, mutated) pairs of function code that differ; NoSwap when code that ran at
    import (module and class bodies) differs other than in line numbers."""
    if _shape(orig) != _shape(mut):
        raise NoSwap(f"import-time code of {orig.co_name} changed")
    for a, b in zip(_nested(orig), _nested(mut)):
        if a.co_flags & _FUNCTION_FLAGS == _FUNCTION_FLAGS:
            if a != b:
                out.append((a, b))
        else:
            _changed_functions(a, b, out)


def _ran(code, executed):
    return id(code) in executed or any(_ran(c, executed) for c in _nested(code))


def plan_swap(job, warm):
    """[(live function, new code)] putting the job's mutant in, or NoSwap."""
    if not job["tests"]:
        raise NoSwap("no tests: an import check only")
    module = sys.modules.get(job["module"])
    file = getattr(module, "__file__", None)
    if not file or os.path.realpath(file) != os.path.realpath(os.path.join(warm.root, job["path"])):
        raise NoSwap("module not imported from the work copy by the warm-up")
    with open(file, encoding="utf-8") as handle:
        original = handle.read()
    try:
        pairs = []
        _changed_functions(compile(original, file, "exec", dont_inherit=True),
                           compile(job["mutated_source"], file, "exec", dont_inherit=True), pairs)
    except (SyntaxError, ValueError) as exc:
        raise NoSwap(f"does not compile: {exc}")
    plan = []
    for a, b in pairs:
        live = [f for f in warm.functions.get(_code_key(a), ()) if f.__code__ == a]
        real = not _same_modulo_lines(a, b)
        if real:
            if not live:
                raise NoSwap(f"no live function has the code of {a.co_qualname}")
            if a.co_freevars != b.co_freevars or (a.co_flags & _KIND_FLAGS) != (b.co_flags & _KIND_FLAGS):
                raise NoSwap(f"{a.co_qualname}: free variables or function kind changed")
            if any(_ran(f.__code__, warm.executed) for f in live):
                raise NoSwap(f"{a.co_qualname} ran during the warm-up (import or collection time)")
        # Functions that only moved (a removed multi-line statement above them) get their new line
        # numbers too where that is possible, so tracebacks match the subprocess run.
        plan.extend((f, b) for f in live if real or a.co_freevars == b.co_freevars)
    if not any(not _same_modulo_lines(a, b) for a, b in pairs):
        raise NoSwap("no function code changed")
    return plan


def apply_swap(plan):
    """Set each function's new code; all or nothing."""
    done = []
    try:
        for func, code in plan:
            done.append((func, func.__code__))
            func.__code__ = code
    except ValueError as exc:  # e.g. a closure whose cell count the new code does not fit
        for func, code in reversed(done):
            func.__code__ = code
        raise NoSwap(f"cannot set __code__: {exc}")


class MutantLoader(importlib.machinery.SourceFileLoader):
    """Serves the mutated source from memory and never touches bytecode caches."""

    def __init__(self, fullname, path, source):
        super().__init__(fullname, path)
        self.source = source.encode("utf-8")

    def get_data(self, path):
        return self.source if path == self.path else super().get_data(path)

    def path_stats(self, path):
        raise OSError("a mutant has no bytecode cache")


class MutantFinder:
    """Meta path finder answering for the mutated module only."""

    def __init__(self, name, path, source):
        self.name, self.path, self.source = name, path, source

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.name:
            return None
        return importlib.util.spec_from_file_location(fullname, self.path,
                                                      loader=MutantLoader(fullname, self.path, self.source))


def drop_repo_modules(warm, job):
    top = job["module"].split(".")[0]
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if (name in warm.test_modules or name == top or name.startswith(top + ".")
                or (file and _under(file, warm.root))):
            del sys.modules[name]
    importlib.invalidate_caches()


def imports_ok(warm, job):
    """GateRunner's import check: a fresh import of the module with the mutant in it."""
    drop_repo_modules(warm, job)
    try:
        importlib.import_module(job["module"])
    except BaseException as exc:  # SystemExit and KeyboardInterrupt from module code count too
        return False, f"{type(exc).__name__}: {exc}"[:500]
    return True, ""


# --- one child ------------------------------------------------------------------------------------------


class Recorder:
    """pytest plugin: a test passed when its setup, call and teardown all passed (JUnit's verdict)."""

    def __init__(self):
        self.phases = {}

    def pytest_runtest_logreport(self, report):
        self.phases.setdefault(report.nodeid, {})[report.when] = report.outcome

    def passed(self, nodeid):
        phases = self.phases.get(nodeid, {})
        return phases.get("call") == "passed" and all(v == "passed" for v in phases.values())


def judge(job, warm, basetemp, exitfirst=False):
    """The verdict on one job, computed in the child."""
    import pytest

    mode, why = "swap", ""
    live = getattr(sys.modules.get(job["module"]), "__file__", None)
    file = os.path.join(warm.root, job["path"])
    file = live if live and os.path.realpath(live) == os.path.realpath(file) else file
    try:
        # The test modules stay imported: a swap is allowed only when the changed functions never ran in
        # the parent, so nothing a test module built at import holds a result of the original code, and
        # every reference it holds is to a function object whose code was just replaced.
        apply_swap(plan_swap(job, warm))
    except NoSwap as exc:
        mode, why = "fresh", str(exc)
        drop_repo_modules(warm, job)
    # As if the mutated file were on disk: any later import or reload of the module gets B, and
    # tracebacks and inspect.getsource show B's lines (an entry without mtime is never re-read).
    sys.meta_path.insert(0, MutantFinder(job["module"], file, job["mutated_source"]))
    lines = job["mutated_source"].splitlines(keepends=True)
    linecache.cache[file] = (len(job["mutated_source"]), None, lines, file)
    result = {"mode": mode, "detail": why, "failing": []}
    if not job["tests"]:
        ok, tail = imports_ok(warm, job)
        return dict(result, status="survived" if ok else "import_error", detail=tail or why)
    recorder = Recorder()
    code = pytest.main([*job["tests"], "-q", "--no-header", f"--rootdir={warm.root}", *_PYTEST_ARGS,
                        *(["-x"] if exitfirst else []), f"--basetemp={basetemp}"], plugins=[recorder])
    # With -x the tests after the first failure never ran: report the ones that ran and failed. When
    # none did but some never ran (a collection error), those did not pass either.
    failing = [t for t in job["tests"] if t in recorder.phases and not recorder.passed(t)]
    failing = failing or [t for t in job["tests"] if not recorder.passed(t)]
    result.update(failing=failing, exit_code=int(code))
    if not failing:
        return dict(result, status="survived")
    if mode == "fresh":
        # A swapped mutant's module imported in the parent without running the changed code, so a fresh
        # import of it cannot fail; a fresh-path mutant may have broken the import itself.
        ok, tail = imports_ok(warm, job)
        if not ok:
            return dict(result, status="import_error", detail=tail)
    return dict(result, status="killed")


def child_main(job, warm, basetemp, log_path, write_fd, exitfirst=False):
    """Runs in the forked child: never returns."""
    status = 1
    try:
        os.setpgid(0, 0)
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        _die_with_parent()
        out = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(out, 1)
        os.dup2(out, 2)
        os.close(out)
        result = judge(job, warm, basetemp, exitfirst)
        sys.stdout.flush()
        sys.stderr.flush()
        data = (json.dumps(result) + "\n").encode()
        while data:
            data = data[os.write(write_fd, data):]
        status = 0
    except BaseException as exc:
        try:
            os.write(write_fd, (json.dumps({"status": "error", "detail": f"worker: {type(exc).__name__}: {exc}"[:500]})
                                + "\n").encode())
        except OSError:
            pass
    finally:
        os._exit(status)


def _die_with_parent():
    """Ask Linux to kill this child if the worker dies (prctl PR_SET_PDEATHSIG), so no mutant outlives a batch."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


# --- the parent: fork, watch, collect -------------------------------------------------------------------


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


def run_jobs(spec, warm, emit):
    """Fork up to `workers` children at a time; each job's result goes to `emit` as soon as it is known."""
    scratch = spec["basetemp"]
    pending = list(spec["jobs"])
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
                child_main(job, warm, os.path.join(scratch, f"bt{slot}"), os.path.join(scratch, f"slot{slot}.log"),
                           write_fd, bool(spec.get("exitfirst", False)))
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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    with open(args.spec, encoding="utf-8") as handle:
        spec = json.load(handle)
    os.makedirs(spec["basetemp"], exist_ok=True)
    # A fresh-path child re-imports the test modules, and pytest re-does their assertion rewriting (a
    # compile per file) unless it finds bytecode; keep bytecode in a scratch tree, never in the work copy. The
    # mutated module itself is compiled from memory by MutantLoader and never cached.
    sys.pycache_prefix = os.path.join(spec["basetemp"], "pycache")
    sys.dont_write_bytecode = False
    # pytest and the repo's code print to fds 1 and 2; keep the worker's own stdout for one summary line.
    summary = os.fdopen(os.dup(1), "w")
    log = open(os.path.join(spec["basetemp"], "worker.log"), "w")
    os.dup2(log.fileno(), 1)
    os.dup2(log.fileno(), 2)
    start = time.monotonic()
    cache_distributions()
    warm = warm_up(spec, log)
    warmup_sec = time.monotonic() - start
    # Children need not scan the warm objects again for garbage; keeps copy-on-write pages shared.
    gc.collect()
    gc.freeze()
    counts = {}
    with open(args.out, "w", encoding="utf-8") as out:
        def emit(result):
            counts[result["status"]] = counts.get(result["status"], 0) + 1
            out.write(json.dumps(result) + "\n")
            out.flush()

        run_jobs(spec, warm, emit)
    summary.write(json.dumps({"jobs": len(spec["jobs"]), "warmup_sec": round(warmup_sec, 3),
                              "total_sec": round(time.monotonic() - start, 3), "statuses": counts}) + "\n")
    summary.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())

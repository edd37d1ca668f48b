"""In-sandbox mutant gating worker: imports pytest and the repo once, then forks one child per mutant.

Copied into the sandbox and run once per batch (stdlib + pytest only; never imports repo2rlenv):

    python gate_worker.py --spec SPEC.json --out RESULTS.jsonl

with the work copy of the repo as cwd and its import roots on PYTHONPATH. SPEC holds `rootdir`,
`basetemp` (a scratch dir), `workers` (children at once), `exitfirst` (stop a job's tests at the
first failure), `pytest_args` (the repo's pytest setup as every run applies it) and `jobs`, each
`{id, path, module, qualname, mutated_source, tests, timeout_sec}`. One JSON line per job goes to
RESULTS as soon as it is known: `{id, status, failing, duration, mode, detail}` with status one of
survived | killed | timeout | import_error | error (the child died without a verdict). One summary
line goes to stdout; pytest's own output goes to `basetemp`.

Why this shape: a pytest subprocess per mutant spends most of its time starting pytest (loading plugins,
importing the suite). Here a warm-up, a pytest run over the union of the jobs' tests, loads pytest's
plugins, the conftests, the test modules and the package once and collects the tests; each child then
only runs its tests. The warm-up's `pytest_runtestloop` is ours: still inside that run (config configured,
items collected, no test run), it forks a child per swap-path job, which runs the job's items through
pytest's own run-test protocol, in the job's order, as `pytest -x ID...` would (no pytest start at all).
Jobs that cannot go that way (a `fresh` mutant, a test the warm-up did not collect, an import check, a
session the child cannot take over) are judged after the warm-up's pytest has finished, by children
that each call `pytest.main` on the job's tests.

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
import pathlib
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

    def __init__(self, root, executed, test_modules, functions, pytest_args=()):
        self.root = root
        self.pytest_args = list(pytest_args)  # the repo's pytest setup as our runs apply it
        self.executed = executed  # id(code) -> code of every function that ran during the warm-up
        self.test_modules = test_modules  # names to drop so pytest re-imports them
        self.functions = functions  # (co_filename, co_qualname) -> live function objects
        self.originals = {}  # module file -> its code as on disk, compiled once (see `compile_originals`)


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


class Recorder:
    """pytest plugin: a test passed when its setup, call and teardown all passed and no report of it
    failed. Every report counts, not the last of a phase: unittest `subTest` and pytest 9's `subtests`
    send one report per failing subtest and then a passed report for the parent's call; a strict XPASS
    and a warning turned into an error arrive as a failed call."""

    def __init__(self):
        self.phases = {}
        self.failed = set()

    def pytest_runtest_logreport(self, report):
        phases = self.phases.setdefault(report.nodeid, {})
        if report.failed:
            self.failed.add(report.nodeid)
        if type(report).__name__.lower() != "subtestreport":  # a skipped subtest skips nothing else
            xfailed = report.skipped and getattr(report, "wasxfail", None) is not None
            # An xfailed test is a gate that passed on A (the baseline's plugin counts it so); only its
            # XPASS(strict), a failed report, notices B.
            phases[report.when] = "passed" if xfailed else report.outcome

    def passed(self, nodeid):
        phases = self.phases.get(nodeid, {})
        return (nodeid not in self.failed and phases.get("call") == "passed"
                and all(v == "passed" for v in phases.values()))


def live_session(on_collected):
    """pytest plugin for the warm-up: once collection is over, judges the jobs it can from inside the
    parent's own run, then lets pytest finish; also records the outcomes of the tests run in its children.

    The warm-up is a real `pytest` run of the union of the jobs' tests whose `pytest_runtestloop` is this
    plugin's: the config stays configured and the session holds the collected items, so a swap-path child
    skips pytest's start (config, plugins, entry points, collection: most of its time) and runs its job's
    items as pytest's own loop would, under the same hook wrappers (logging, warnings). What it cannot
    judge this way goes back to the caller and is judged after pytest has finished, as before.
    `on_collected(session, plugin)` returns the jobs left. (A class made here: the hook marker needs
    pytest, which this module imports only where it runs pytest.)"""
    import pytest

    class LiveSession(Recorder):
        def __init__(self):
            super().__init__()
            self.left = None  # stays None when collection never finished (the session failed first)

        @pytest.hookimpl(tryfirst=True)
        def pytest_runtestloop(self, session):
            self.left = on_collected(session, self)
            return True  # firstresult: pytest's own loop does not run

    return LiveSession()


def _profiler(executed):
    def profile(frame, event, arg):
        if event == "call":
            code = frame.f_code
            executed[id(code)] = code

    return profile


def _set_profile(func):
    import threading

    sys.setprofile(func)
    threading.setprofile(func)


def index_warm(spec, executed, collector):
    """Index what the children need from the parent's current state."""
    root = os.path.realpath(spec["rootdir"])
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
    return Warm(root, executed, test_modules, functions, spec.get("pytest_args", ()))


def warm_up(spec, log, run_live):
    """Run the warm-up (pytest over the union of the jobs' tests) under a profiler; returns the warm
    state after pytest finished (None when no job is left) and the jobs still to judge.

    `run_live(warm, session, recorder)` is called once collection is over, inside the parent's pytest run,
    and returns the jobs it left unjudged. The profiler is off while it runs (the children it forks
    inherit `executed` as it is at the fork) and on again afterwards when jobs are left: the session's
    finish and unconfigure hooks may run repo code, and those jobs swap only functions that never ran here."""
    import pytest

    root = os.path.realpath(spec["rootdir"])
    tests = sorted({t for job in spec["jobs"] for t in job["tests"]})
    collector = WarmupCollector()
    executed = {}
    profile = _profiler(executed)

    def on_collected(session, recorder):
        _set_profile(None)
        try:
            warm = index_warm(spec, executed, collector)
            # Children need not scan the warm objects again for garbage; keeps copy-on-write pages shared.
            gc.collect()
            gc.freeze()
            left = run_live(warm, session, recorder)
        finally:
            gc.unfreeze()  # gc.get_objects() does not list frozen objects: the index below needs them
        if left:  # profiling pytest's finish is slow: only for jobs still to judge
            _set_profile(profile)
        return left

    live = live_session(on_collected)
    if tests:
        # Not `--collect-only`: the session must be one that runs tests (plugins read the option), and
        # `-x` is set per child, so a collection error does not stop the warm-up's collection.
        _set_profile(profile)
        try:
            pytest.main(["-q", f"--rootdir={root}", *_PYTEST_ARGS, *spec.get("pytest_args", []),
                         f"--basetemp={os.path.join(spec['basetemp'], 'warmup')}", *tests], plugins=[collector, live])
        except BaseException as exc:  # a broken suite still lets every child report its own verdict
            log.write(f"warm-up raised {type(exc).__name__}: {exc}\n")
        finally:
            _set_profile(None)
    left = list(spec["jobs"]) if live.left is None else live.left
    return (index_warm(spec, executed, collector) if left else None), left


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


def _compile_file(file):
    with open(file, encoding="utf-8") as handle:
        return compile(handle.read(), file, "exec", dont_inherit=True)


def compile_originals(warm, jobs):
    """In the parent: compile each target module as on disk once, not once per child (a compile of a
    large module is a good part of a warm-session child's time)."""
    for job in jobs:
        file = getattr(sys.modules.get(job["module"]), "__file__", None)
        if file and file not in warm.originals:
            try:
                warm.originals[file] = _compile_file(file)
            except (OSError, SyntaxError, ValueError):
                pass  # the child tries again and reports why


def plan_swap(job, warm):
    """[(live function, new code)] putting the job's mutant in, or NoSwap."""
    if not job["tests"]:
        raise NoSwap("no tests: an import check only")
    module = sys.modules.get(job["module"])
    file = getattr(module, "__file__", None)
    if not file or os.path.realpath(file) != os.path.realpath(os.path.join(warm.root, job["path"])):
        raise NoSwap("module not imported from the work copy by the warm-up")
    try:
        pairs = []
        _changed_functions(warm.originals.get(file) or _compile_file(file),
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

# `detail` of a verdict given by running the items of the parent's session (the swap path's fast way).
LIVE_DETAIL = "ran in the warm session"


def _on_disk(job, warm):
    """As if the mutated file were on disk: any later import or reload of the module gets B, and
    tracebacks and inspect.getsource show B's lines (an entry without mtime is never re-read)."""
    live = getattr(sys.modules.get(job["module"]), "__file__", None)
    file = os.path.join(warm.root, job["path"])
    file = live if live and os.path.realpath(live) == os.path.realpath(file) else file
    sys.meta_path.insert(0, MutantFinder(job["module"], file, job["mutated_source"]))
    lines = job["mutated_source"].splitlines(keepends=True)
    linecache.cache[file] = (len(job["mutated_source"]), None, lines, file)


def _failing(tests, recorder):
    # With -x the tests after the first failure never ran: report the ones that ran and failed. When
    # none did but some never ran (a collection error), those did not pass either.
    failing = [t for t in tests if t in recorder.phases and not recorder.passed(t)]
    return failing or [t for t in tests if not recorder.passed(t)]


def judge(job, warm, basetemp, exitfirst=False):
    """The verdict on one job, computed in the child by a `pytest.main` run of its tests."""
    import pytest

    mode, why = "swap", ""
    try:
        # The test modules stay imported: a swap is allowed only when the changed functions never ran in
        # the parent, so nothing a test module built at import holds a result of the original code, and
        # every reference it holds is to a function object whose code was just replaced.
        apply_swap(plan_swap(job, warm))
    except NoSwap as exc:
        mode, why = "fresh", str(exc)
        drop_repo_modules(warm, job)
    _on_disk(job, warm)
    result = {"mode": mode, "detail": why, "failing": []}
    if not job["tests"]:
        ok, tail = imports_ok(warm, job)
        return dict(result, status="survived" if ok else "import_error", detail=tail or why)
    recorder = Recorder()
    code = pytest.main([*job["tests"], "-q", "--no-header", f"--rootdir={warm.root}", *_PYTEST_ARGS,
                        *warm.pytest_args,
                        *(["-x"] if exitfirst else []), f"--basetemp={basetemp}"], plugins=[recorder])
    failing = _failing(job["tests"], recorder)
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


def _own_session(session, basetemp, exitfirst):
    """Make the parent's collected session this child's, as a fresh `pytest [-x] --basetemp=B` run of
    the same items would start. The one place using pytest's private API; checked against pytest 8.3.5,
    9.0.3 (host) and 9.2.0 (sandbox image). Any error here sends the job to a `pytest.main` child.

    - `-x` is `maxfail=1`, which the session reads after every report; the parent ran without it so that
      a collection error did not cut its collection short, and the collection errors it counted are reset.
    - `tmp_path`: pytest empties a given --basetemp on first use, so the children (running at once) must
      not share the parent's; the factory has not handed out a directory in this process yet.
    - output capture: the parent's global capture is suspended between items (fds restored), but its
      temporary files are shared with every child (one file offset; each read truncates), so the child
      stops it and starts its own, left suspended as pytest leaves it between items.
    - the session's collection-error count (the parent may have had some) is reset; -x reads it.
    Session-scoped fixtures need nothing: the parent ran no test, so the child's SetupState is empty and
    every fixture is set up afresh, in this process."""
    config = session.config
    factory = config._tmp_path_factory
    if not {"_given_basetemp", "_basetemp"} <= set(vars(factory)):
        raise AttributeError("TempPathFactory has no _given_basetemp/_basetemp")
    capman = config.pluginmanager.getplugin("capturemanager")
    factory._given_basetemp = pathlib.Path(os.path.abspath(basetemp))
    factory._basetemp = None
    if capman is not None:
        # Stopping puts back the fds saved when the parent started capturing: keep this child's log.
        saved = [os.dup(1), os.dup(2)]
        capman.stop_global_capturing()
        for fd, copy in zip((1, 2), saved):
            os.dup2(copy, fd)
            os.close(copy)
        capman.start_global_capturing()
        capman.suspend_global_capture(in_=False)
    config.option.maxfail = 1 if exitfirst else 0
    session.testsfailed = 0
    session.shouldfail = session.shouldstop = False


def judge_live(job, warm, basetemp, exitfirst, session, recorder):
    """The verdict on a swap-path job from the parent's collected items, without starting pytest again.

    Returns `{"status": "retry"}` (before any test ran) when the job needs a `pytest.main` child."""
    try:
        apply_swap(plan_swap(job, warm))
    except NoSwap as exc:
        return {"status": "retry", "detail": str(exc)}
    try:
        _own_session(session, basetemp, exitfirst)
    except Exception as exc:
        return {"status": "retry", "detail": f"cannot reuse the warm session: {type(exc).__name__}: {exc}"}
    _on_disk(job, warm)
    recorder.phases.clear()
    recorder.failed.clear()
    by_id = {item.nodeid: item for item in session.items}
    # The job's order, as `pytest ID...` collects them, and each item's `nextitem` within the job (not
    # the parent's whole list): a test's teardown tears down the module/class/session fixtures the next
    # one does not share, and the last one's all of them, as in the subprocess run.
    items = [by_id[t] for t in dict.fromkeys(job["tests"])]
    code = 0
    try:
        for i, item in enumerate(items):
            nextitem = items[i + 1] if i + 1 < len(items) else None
            # Called as pytest's own loop calls it (`config.hook`, not `item.ihook`), so the same hook
            # implementations run; -x sets `shouldfail` after the first failed report.
            item.config.hook.pytest_runtest_protocol(item=item, nextitem=nextitem)
            if session.shouldfail or session.shouldstop:
                break
    except BaseException as exc:  # pytest.main reports an internal error; the tests that ran decide
        code = 3
        print(f"internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
    failing = _failing(job["tests"], recorder)
    return {"mode": "swap", "detail": LIVE_DETAIL, "failing": failing, "exit_code": code or int(bool(failing)),
            "status": "killed" if failing else "survived"}


def child_main(job, judge_job, log_path, write_fd):
    """Runs in the forked child: `judge_job(job)` gives the verdict. Never returns."""
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
        result = judge_job(job)
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
    exitfirst = bool(spec.get("exitfirst", False))
    counts = {}
    warmup_sec = None
    with open(args.out, "w", encoding="utf-8") as out:
        def emit(result):
            counts[result["status"]] = counts.get(result["status"], 0) + 1
            out.write(json.dumps(result) + "\n")
            out.flush()

        def run_live(warm, session, recorder):
            nonlocal warmup_sec
            warmup_sec = time.monotonic() - start
            return run_in_session(spec, warm, session, recorder, emit)

        warm, left = warm_up(spec, log, run_live)
        if warmup_sec is None:
            warmup_sec = time.monotonic() - start
        # Children need not scan the warm objects again for garbage; keeps copy-on-write pages shared.
        gc.collect()
        gc.freeze()
        run_jobs(spec, left, lambda job, basetemp: judge(job, warm, basetemp, exitfirst), emit)
    summary.write(json.dumps({"jobs": len(spec["jobs"]), "warmup_sec": round(warmup_sec, 3),
                              "total_sec": round(time.monotonic() - start, 3), "statuses": counts}) + "\n")
    summary.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())

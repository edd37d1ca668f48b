"""The gate worker's warm-up: one pytest run over the union of the batch's tests, under a profiler, and
the state it leaves for the children (what ran, the live function objects, the test modules).

A sibling of `gate_worker.py` (see its docstring for the why), shipped with it; stdlib + pytest only.
"""

import gc
import importlib
import importlib.machinery
import importlib.metadata
import importlib.util
import os
import sys
import types


_TEST_DIRS = frozenset({"tests", "test", "testing"})


# `--tb=native`: failure reports are never read here, and pytest's default style re-parses source files
# for every traceback entry (over half of a killed mutant's time); outcomes do not depend on it.
PYTEST_ARGS = ("-p", "no:cacheprovider", "-W", "ignore::pytest.PytestAssertRewriteWarning", "--tb=native")


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


def under(path, root):
    try:
        return os.path.commonpath([os.path.realpath(path), root]) == root
    except ValueError:
        return False


def _looks_like_test(path, root):
    rel = os.path.relpath(os.path.realpath(path), root).split(os.sep)
    name = rel[-1]
    return (bool(_TEST_DIRS.intersection(rel[:-1])) or name == "conftest.py"
            or name.startswith("test_") or name.endswith("_test.py"))


def code_key(code):
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
                functions.setdefault(code_key(obj.__code__), []).append(obj)
    test_modules = set(collector.modules)
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if file and under(file, root) and _looks_like_test(file, root):
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
            pytest.main(["-q", f"--rootdir={root}", *PYTEST_ARGS, *spec.get("pytest_args", []),
                         f"--basetemp={os.path.join(spec['basetemp'], 'warmup')}", *tests], plugins=[collector, live])
        except BaseException as exc:  # a broken suite still lets every child report its own verdict
            log.write(f"warm-up raised {type(exc).__name__}: {exc}\n")
        finally:
            _set_profile(None)
    left = list(spec["jobs"]) if live.left is None else live.left
    return (index_warm(spec, executed, collector) if left else None), left


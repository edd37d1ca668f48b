"""One child's verdict on one mutant: its tests run through pytest's own protocol inside the warm session,
or by `pytest.main` on the job's tests.

A sibling of `gate_worker.py` (see its docstring for the why), shipped with it; stdlib + pytest only.
"""

import json
import linecache
import os
import pathlib
import signal
import sys

from gate_warmup import Recorder, PYTEST_ARGS
from gate_swap import MutantFinder, NoSwap, apply_swap, drop_repo_modules, imports_ok, plan_swap


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
    code = pytest.main([*job["tests"], "-q", "--no-header", f"--rootdir={warm.root}", *PYTEST_ARGS,
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


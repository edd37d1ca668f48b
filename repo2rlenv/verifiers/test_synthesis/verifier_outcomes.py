"""The pytest plugin of a graded run: what was collected, and each case's outcome as pytest decides it.

PYTEST_DONT_REWRITE: the zygote imports this module before pytest starts, and pytest would otherwise warn that
it cannot rewrite it, which a repo's `filterwarnings = error` turns into a crash of every run.

Loaded with `-p verifier_outcomes` from the boot dir; the run process sets `FD` (a file it opened in the
run's output dir) before pytest starts. It writes JSON lines:

    {"collected": [node id, …]}              once, when collection is done
    {"collect_error": node id}               a module (or any collector) failed to collect
    {"case": node id, "outcome": o}          after a case's teardown: o is passed, failed, error or skipped
    {"finished": exit status}                the session ended normally

Outcomes are keyed by the node ids pytest collected: nothing a test writes into a name, a message or a
report attribute changes how it is counted. A case's outcome is the worst of its phases and of any
subtest reports (setup or teardown errors → error; a failed subtest fails its case; xfail → skipped,
strict xpass → failed, as pytest reports them). Each case's call has its own wall clock
(`CASE_TIMEOUT`): a case that hangs fails alone instead of ending the whole run.

Reports are made the way pytest makes them; when making one fails (the run's guard refuses pytest the
code objects of changed code, which its traceback formatting reads), a plain report with the exception
type and message replaces it, so a refused introspection never takes the session down.

At the session's start (after every other plugin's), `SESSION_START` seals the changed modules: they are
imported before any test module, then their files emptied (`verifier_guard.seal`).

Stdlib + pytest; copied verbatim into every task.
"""

import json
import os
import signal

import pytest

FD = None  # set by the run process before pytest starts
CASE_TIMEOUT = None  # seconds per case call, set likewise
SESSION_START = None  # what the run does once pytest is set up, before collection (verifier_guard.seal)
_RANK = {"passed": 0, "skipped": 1, "failed": 2, "error": 3}
_outcomes = {}


class CaseTimeout(Exception):
    """A case's call ran past its wall clock."""


def _emit(record):
    if FD is not None:
        data = (json.dumps(record, sort_keys=True) + "\n").encode("utf-8", "replace")
        while data:
            data = data[os.write(FD, data):]


def _plain(excinfo):
    try:
        return f"{excinfo.typename}: {excinfo.value}"[:2000]
    except Exception:
        return "an exception whose message could not be read"


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_make_collect_report(collector):
    try:
        return (yield)
    except Exception:
        from _pytest.reports import CollectReport
        from _pytest.runner import CallInfo

        info = CallInfo.from_call(lambda: None, "collect")
        report = CollectReport(collector.nodeid, "failed", "collection failed (its report could not be made)", None)
        report.call = info
        return report


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    try:
        return (yield)
    except Exception:
        from _pytest.reports import TestReport

        excinfo = call.excinfo
        outcome = "failed" if excinfo is not None else "passed"
        longrepr = _plain(excinfo) if excinfo is not None else None
        if excinfo is not None and excinfo.errisinstance(pytest.skip.Exception):
            outcome, longrepr = "skipped", (str(item.path), (item.location[1] or 0) + 1, longrepr)
        return TestReport(item.nodeid, item.location, {k: 1 for k in item.keywords}, outcome, longrepr, call.when,
                          [], call.duration, user_properties=list(item.user_properties))


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session):
    # The case timeout's handler is installed once, now: after the session starts no handler can be
    # (verifier_kernel.seal_signal_handlers); each case only sets and clears the timer.
    if CASE_TIMEOUT:
        signal.signal(signal.SIGALRM, _on_alarm)
    if SESSION_START is not None:
        SESSION_START()


def pytest_collectreport(report):
    if report.failed:
        _emit({"collect_error": report.nodeid})


def pytest_collection_finish(session):
    _emit({"collected": [item.nodeid for item in session.items]})


def _on_alarm(signum, frame):
    raise CaseTimeout(f"the case ran longer than {CASE_TIMEOUT} s")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    if not CASE_TIMEOUT:
        return (yield)
    signal.setitimer(signal.ITIMER_REAL, CASE_TIMEOUT)
    try:
        return (yield)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def pytest_runtest_logreport(report):
    if report.when == "call":
        outcome = report.outcome
    elif report.failed:
        outcome = "error"
    elif report.skipped and report.when == "setup":
        outcome = "skipped"
    else:
        outcome = "passed"
    worst = _outcomes.get(report.nodeid, "passed")
    _outcomes[report.nodeid] = max(worst, outcome, key=_RANK.__getitem__)
    if report.when == "teardown":
        _emit({"case": report.nodeid, "outcome": _outcomes.pop(report.nodeid)})


def pytest_sessionfinish(session, exitstatus):
    for nodeid, outcome in _outcomes.items():  # a case whose teardown never reported
        _emit({"case": nodeid, "outcome": outcome})
    _outcomes.clear()
    _emit({"finished": int(exitstatus)})

"""pytest plugin copied into sandboxes (stdlib + pytest + coverage only; never imports repo2rlenv).

- Records each test's outcome from pytest's own reports (`pytest_runtest_logreport`) into the JSON-lines
  file named by `R2E_OUTCOMES`: the worst of its setup, call and teardown and of every subtest report
  (unittest `subTest`, pytest 9's `subtests` fixture and pytest-subtests report a parent that passed
  besides its failing subtests; one JUnit entry per test misses them). A strict XPASS, an error in setup
  or teardown and a warning turned into an error all arrive here as failed reports; an xfailed test
  counts as passed (pytest's verdict: it fails no run), so a B that makes it XPASS(strict) is noticed.
- Puts each test's exact node id into the JUnit XML as a `r2e_nodeid` property (the fallback reader when
  the outcomes file is missing).
- Switches coverage.py's context to the node id around each test. coverage's own
  `dynamic_context = test_function` names tests inherited from mixin classes after the mixin, which
  pytest cannot select; the node id is always selectable.

Slow files (issue 34: a suite that runs mypy per case, or talks to a server per case, never finished its
baseline): with `R2E_SLOW="MEAN,N"` (the baseline's first run only), once a test file's first N tests took
MEAN seconds each or more, its remaining tests are skipped with a reason starting `SET_ASIDE`; the runner
then leaves the whole file out of every later run through `R2E_DESELECT` (a file of paths, one a line), so
what runs is the same in every run, whatever the timing. `R2E_DESELECT_IDS` (a file of node ids, one a
line) leaves out exactly those tests: pytest's own `--deselect` drops every node id that *starts with* the
one given (a quarantined `test_numpy` takes the stable `test_numpy_error` with it), and its argv grows
with every id.

Lines written: `{"case": id, "outcome": o, "duration": s, "message": m, "text": t}` once per test (o is
passed, skipped, failed or error) and `{"collect_error": id, "message": m, "text": t}` per collector
that failed. `text` is the end of the failure report (the runner reads causes such as "needs network"
from it).

Where this rule differs from the verifier's (`verifiers/test_synthesis/verifier_outcomes.py`), on purpose:
this plugin asks "does the repo's own test pass on A, and does B change that?", the verifier asks "does this
case of a submission count?". So an xfailed test is passed here (it fails no run; its strict XPASS on B
is the change noticed) and skipped there (it asserts nothing a reward can count); a skipped subtest leaves
its test passed here (the rest of it ran) and makes the case skipped there (a case must run whole to
count). Everything else agrees. `tests/baseline/test_verdict_rules.py` runs one suite under both.
"""

import json
import os

import pytest

try:
    import coverage
except ImportError:  # runs without coverage are fine
    coverage = None

SET_ASIDE = "r2e: set aside, a slow test file"
_RANK = {"passed": 0, "skipped": 1, "failed": 2, "error": 3}
_files = {}  # test file -> [tests finished, seconds]
_TEXT_CHARS = 4000
_state = {}  # node id -> {"outcome", "duration", "message", "text"}


def _cov():
    return coverage.Coverage.current() if coverage is not None else None


def _write(record):
    path = os.environ.get("R2E_OUTCOMES")
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")


def _texts(report):
    """(first line of the crash message, end of the whole report) of a failed report."""
    try:
        text = report.longreprtext or ""
    except Exception:
        text = ""
    crash = getattr(getattr(report, "longrepr", None), "reprcrash", None)
    message = getattr(crash, "message", None) or (text.strip().splitlines() or [""])[-1]
    message = message.strip().splitlines()[0] if message.strip() else ""
    if message.startswith("E "):  # a collection error's report: pytest's "E   " margin
        message = message[1:].strip()
    return message[:300], text[-_TEXT_CHARS:]


def _is_subtest(report):
    return type(report).__name__.lower() == "subtestreport"


def _slow_rule():
    try:
        mean, count = os.environ.get("R2E_SLOW", "").split(",")
        return float(mean), int(count)
    except ValueError:
        return None


def _lines(variable):
    path = os.environ.get(variable)
    if not path:
        return set()
    with open(path, encoding="utf-8") as handle:
        return {line.strip() for line in handle if line.strip()}


def pytest_collection_modifyitems(config, items):
    files, ids = _lines("R2E_DESELECT"), _lines("R2E_DESELECT_IDS")
    if not files and not ids:
        return
    dropped = [item for item in items if item.nodeid.split("::")[0] in files or item.nodeid in ids]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        gone = {id(item) for item in dropped}
        items[:] = [item for item in items if id(item) not in gone]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    item.user_properties.append(("r2e_nodeid", item.nodeid))
    rule = _slow_rule()
    done, seconds = _files.get(item.nodeid.split("::")[0], (0, 0.0))
    if rule is not None and done >= rule[1] and seconds / done >= rule[0]:
        pytest.skip("%s (%.1fs a test over its first %d)" % (SET_ASIDE, seconds / done, done))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    cov = _cov()
    if cov is not None:
        cov.switch_context(item.nodeid)
    yield
    if cov is not None:
        cov.switch_context("")


def pytest_runtest_logreport(report):
    if report.when == "call":
        outcome = report.outcome
        # An expected failure that happened is pytest's pass (it fails no run): an xfailing test is a
        # gate, which B notices by making it XPASS(strict), reported failed.
        if outcome == "skipped" and getattr(report, "wasxfail", None) is not None:
            outcome = "passed"
        # A skipped subtest does not make its test skipped; only a failing one changes the verdict.
        if _is_subtest(report) and outcome == "skipped":
            outcome = "passed"
    elif report.failed:
        outcome = "error"
    elif report.skipped and report.when == "setup":
        outcome = "skipped"
    else:
        outcome = "passed"
    state = _state.setdefault(report.nodeid, {"outcome": "passed", "duration": 0.0, "message": "", "text": ""})
    if not _is_subtest(report):
        state["duration"] += float(getattr(report, "duration", 0.0) or 0.0)
    if _RANK[outcome] > _RANK[state["outcome"]]:
        state["outcome"] = outcome
        if outcome != "passed":
            state["message"], state["text"] = _texts(report) if report.failed else (_skip_reason(report), "")
    if report.when == "teardown":
        record = _state.pop(report.nodeid)
        if SET_ASIDE not in record["message"]:
            counts = _files.setdefault(report.nodeid.split("::")[0], [0, 0.0])
            counts[0] += 1
            counts[1] += record["duration"]
        _write({"case": report.nodeid, **record})


def _skip_reason(report):
    longrepr = getattr(report, "longrepr", None)
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2])[:300]
    return str(getattr(report, "wasxfail", "") or "")[:300]


def pytest_collectreport(report):
    if report.failed:
        message, text = _texts(report)
        _write({"collect_error": report.nodeid, "message": message, "text": text})


def pytest_sessionfinish(session, exitstatus):
    for nodeid, state in _state.items():  # a test whose teardown never reported (an interrupted run)
        _write({"case": nodeid, **state})
    _state.clear()

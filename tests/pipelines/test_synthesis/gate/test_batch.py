"""The batch gate worker gives the subprocess gate's verdicts, in the local and the Docker sandbox.

One small package with a real suite; a table of hand-written mutants, each chosen for a way a forked,
warm worker could go wrong (references through default arguments, objects and values built when the test
module is imported, async code, nested classes, decorators applied at import, a generator losing its
`yield`, a test that reloads the module or reads its source, a child that dies, an import that breaks, a
loop that never ends). Both runners gate copies of the same candidates and must agree on every verdict.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from repo2rlenv.baseline.runner import SuiteRunner, run_baseline
from repo2rlenv.pipelines.test_synthesis.candidates import Candidate, SkipReason
from repo2rlenv.pipelines.test_synthesis.gate.batch import WORKER_NAME, WORKER_PACKAGE, BatchGateRunner, WorkerStatus
from repo2rlenv.payload import payload_dir, payload_names
from repo2rlenv.pysource.functions import discover_functions
from repo2rlenv.pipelines.test_synthesis.gate.gates import GateRunner, GateTimeouts, failing_tests
from repo2rlenv.sandbox.base import Limits

# The worker's modules import each other by plain name (they run from one flat folder in the sandbox):
# reading one of its constants here takes the folder on sys.path, as the probe's tests do.
if str(payload_dir(WORKER_PACKAGE)) not in sys.path:
    sys.path.append(str(payload_dir(WORKER_PACKAGE)))
from gate_judge import LIVE_DETAIL  # noqa: E402

CORE = '''\
import asyncio
import os


def add(a, b):
    return a + b


def clamp(x, lo, hi):
    if x < lo:
        return lo
    return min(x, hi)


def make_limits():
    return {"max": 3}


LIMITS_MAX = make_limits()["max"]


def countdown(n):
    while n > 0:
        n -= 1
    return n


class Store:
    def __init__(self):
        self.items = {"a": 1}

    def get(self, key):
        return self.items.get(key, 0)


def lookup(store, key, getter=Store.get):
    return getter(store, key)


class Counter:
    def __init__(self, start):
        self.value = start

    def bump(self):
        self.value += 1
        return self.value


def double(x):
    return x * 2


async def fetch_double(x):
    await asyncio.sleep(0)
    return x * 2


class Outer:
    class Inner:
        def value(self):
            return 40 + 2


def twice(fn):
    def wrapper(x):
        return fn(fn(x))
    return wrapper


@twice
def inc(x):
    return x + 1


def gen(n):
    yield n


def shutdown(code):
    return code


def unused(x):
    return x + 1
'''

TESTS = '''\
import asyncio

from tinypkg.core import (Counter, Outer, Store, add, clamp, countdown, double, fetch_double, gen, inc,
                          lookup, make_limits, shutdown)

# Built when pytest imports this module: a worker that keeps the parent's copy of this module would run
# these against the original code.
SHARED = Counter(1)
BUMP = SHARED.bump
EXPECTED_DOUBLE = double(3)


def test_add():
    assert add(2, 3) == 5


def test_add_again():
    assert add(2, 2) == 4


def test_clamp():
    assert clamp(-5, 0, 10) == 0
    assert clamp(5, 0, 10) == 5
    assert clamp(50, 0, 10) == 10


def test_limits():
    assert make_limits() == {"max": 3}


def test_countdown():
    assert countdown(3) == 0


def test_lookup():
    assert lookup(Store(), "a") == 1


def test_bump():
    assert BUMP() == 2


def test_double():
    assert double(3) == EXPECTED_DOUBLE


def test_fetch_double():
    assert asyncio.run(fetch_double(3)) == 6


def test_inner():
    assert Outer.Inner().value() == 42


def test_inc():
    assert inc(1) == 3


def test_gen():
    assert list(gen(4)) == [4]


def test_shutdown():
    assert shutdown(0) == 0
'''

EXTRA = '''\
def triple(x):
    return x * 3


def quadruple(x):
    return x * 4
'''

TESTS_EXTRA = '''\
import importlib
import inspect

import tinypkg.extra as extra


def test_reload():
    assert importlib.reload(extra).triple(2) == 6


def test_source_pinned():
    assert extra.quadruple(1) == 4
    assert "x * 4" in inspect.getsource(extra.quadruple)
'''

LIVE = '''\
def settle(values):
    if len(values) > 1:
        return sorted(values)
    return list(values)


def scale(x):
    return x * 10


def halve(x):
    return x / 2


def stash(path, text):
    path.write_text(text)
    return path


def fetch(path):
    return path.read_text()


def shout(text):
    print(text.upper())


def ident(x):
    return x
'''

# Hazards of running a job's items in the warm session instead of a pytest start of its own.
TESTS_LIVE = '''\
import os
import sys
import time
import unittest

import pytest

from tinypkg.live import fetch, halve, ident, scale, settle, shout, stash


@pytest.fixture(scope="module")
def settled():
    yield
    # Runs in the teardown of the module's last test: in a run of `test_settle` alone, its own teardown.
    assert settle([2, 1]) == [1, 2]


@pytest.fixture(scope="session")
def session_pid():
    return os.getpid()


def test_zz_defined_early(tmp_path):
    # Sorts after test_settle: the warm session's next item after it, though not the next in a file run.
    path = stash(tmp_path / "early.txt", str(os.getpid()))
    time.sleep(0.3)
    assert fetch(path) == str(os.getpid())


def test_stash(tmp_path):
    # Two children at once with tmp_path: a shared --basetemp would be emptied under the other one.
    path = stash(tmp_path / "note.txt", str(os.getpid()))
    time.sleep(0.3)
    assert fetch(path) == str(os.getpid())  # not emptied, nor remade by the other child


def test_shout(capfd):
    shout("hey")
    assert capfd.readouterr().out == "HEY\\n"
    with pytest.raises(OSError):  # pytest's capture stands in for stdin
        sys.stdin.read()


def test_ident(session_pid):
    assert ident(session_pid) == os.getpid()  # the session fixture was set up in this process


@pytest.mark.parametrize("x, half", [(4, 2), (0, 0)])
def test_halve(x, half):
    assert halve(x) == half


class ScaleTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.factor = 10

    def test_scale(self):
        self.assertEqual(scale(2), 2 * self.factor)


def test_settle(settled):
    assert settle([1]) == [1]
'''

CORE_PY, EXTRA_PY, LIVE_PY = "tinypkg/core.py", "tinypkg/extra.py", "tinypkg/live.py"
SOURCES = {CORE_PY: CORE, EXTRA_PY: EXTRA, LIVE_PY: LIVE}

# case → (module path, function qualname, text in the function, its replacement, verdict, worker mode).
# Verdicts: "killed" / "survived" (kept), or the skip reason. Mode None: the worker gives no mode
# (timeout) or no verdict at all (the crash is re-run by GateRunner).
CASES = {
    "killed": (CORE_PY, "add", "a + b", "a - b", "killed", "swap"),
    "survived": (CORE_PY, "clamp", "x < lo", "x <= lo", "survived", "swap"),
    "breaks import": (CORE_PY, "make_limits", 'return {"max": 3}', "return None", SkipReason.breaks_import,
                      "fresh"),
    "infinite loop": (CORE_PY, "countdown", "n -= 1", "n += 1", SkipReason.timeout_on_b, None),
    "default argument": (CORE_PY, "Store.get", "self.items.get(key, 0)", "self.items.get(key, 0) - 1", "killed",
                         "swap"),
    "object built at test import": (CORE_PY, "Counter.bump", "self.value += 1", "self.value -= 1", "killed",
                                    "swap"),
    "value computed at test import": (CORE_PY, "double", "return x * 2", "return x * 3", "survived",
                                      "fresh"),
    "async": (CORE_PY, "fetch_double", "return x * 2", "return x + 2", "killed", "swap"),
    "nested class": (CORE_PY, "Outer.Inner.value", "40 + 2", "40 - 2", "killed", "swap"),
    "decorator applied at import": (CORE_PY, "twice", "fn(fn(x))", "fn(x)", "killed", "fresh"),
    "decorated function": (CORE_PY, "inc", "x + 1", "x + 2", "killed", "swap"),
    "generator loses its yield": (CORE_PY, "gen", "yield n", "pass", "killed", "fresh"),
    "child dies": (CORE_PY, "shutdown", "return code", "return os._exit(code)", "killed", None),
    "no covering test": (CORE_PY, "unused", "x + 1", "x - 1", "survived", "fresh"),
    "does not compile": (CORE_PY, "add", "a + b", "a +", SkipReason.does_not_compile, None),
    "module reloaded by a test": (EXTRA_PY, "triple", "x * 3", "x * 4", "killed", "swap"),
    "source read by a test": (EXTRA_PY, "quadruple", "x * 4", "x * 2 * 2", "killed", "swap"),
    # B also touches a second file: not the worker's job, so GateRunner judges it.
    "two files changed": (CORE_PY, "add", "a + b", "b - a", "killed", None),
    # Run in the warm session (see TESTS_LIVE): the job's own next item, so the module fixture is torn
    # down in its last test's teardown, which notices B.
    "module fixture torn down by the job's last test": (LIVE_PY, "settle", "sorted(values)",
                                                        "sorted(values, reverse=True)", "killed", "swap"),
    "unittest TestCase": (LIVE_PY, "scale", "x * 10", "x * 11", "killed", "swap"),
    "parametrized test": (LIVE_PY, "halve", "x / 2", "x // 3", "killed", "swap"),
    # Adjacent, so their children run at once.
    "tmp_path in a child": (LIVE_PY, "stash", "path.write_text(text)", 'path.write_text(text + "")', "survived",
                            "swap"),
    "tmp_path in another child": (LIVE_PY, "fetch", "path.read_text()", 'path.read_text() + ""', "survived",
                                  "swap"),
    "output capture": (LIVE_PY, "shout", "print(text.upper())", 'print(text.upper(), end="\\n")', "survived",
                       "swap"),
    "session fixture": (LIVE_PY, "ident", "return x", "return x + 0", "survived", "swap"),
}
# Long enough for a pytest start on a busy machine, short enough that the endless loop is cheap.
TIMEOUT_SEC = 10.0


def _verdict(cand: Candidate) -> str:
    if cand.status == "dropped":
        return cand.skip_reason or "?"
    return "killed" if cand.killed else "survived"


def _candidates(root: Path) -> dict[str, Candidate]:
    functions, _ = discover_functions(root, min_loc=1)
    by_name = {(f.path, f.qualname): f for f in functions}
    out = {}
    for case, (path, qualname, old, new, _, _) in CASES.items():
        func, source = by_name[path, qualname], SOURCES[path]
        start = sum(len(line) for line in source.splitlines(keepends=True)[:func.lineno - 1])
        at = source.index(old, start)
        mutated = source[:at] + new + source[at + len(old):]
        files_b = {func.path: mutated}
        if case == "two files changed":
            files_b[EXTRA_PY] = EXTRA + "# also touched\n"
        out[case] = Candidate(candidate_id=f"c{len(out):02d}", strategy="mutation", function=func,
                              operator="hand", line=source.count("\n", 0, at) + 1,
                              files_b=files_b, diff=f"-{old}\n+{new}\n")
    return out


def _sandbox(kind: str, request: pytest.FixtureRequest, cache: Path):
    return request.getfixturevalue("make_sandbox")(kind, Limits(timeout_sec=300, cpus=2), "fast-gates-test", cache)


def _write_repo(root: Path, extra: dict[str, str]) -> None:
    """The tiny package and its suite (plus `extra` files) under `root`."""
    files = {
        "pyproject.toml": '[project]\nname = "tinypkg"\nversion = "0.0.1"\n'
                          '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n',
        "tinypkg/__init__.py": "",
        **SOURCES,
        "tests/test_core.py": TESTS,
        "tests/test_extra.py": TESTS_EXTRA,
        **extra,
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


@pytest.fixture(scope="module", params=["local", "docker"])
def gated(request, tmp_path_factory):
    """Both runners over the whole table in one sandbox: (kind, root, subprocess, batch, worker results)."""
    root = tmp_path_factory.mktemp("fastgates") / "repo"
    _write_repo(root, {"tests/test_live.py": TESTS_LIVE})
    sandbox = _sandbox(request.param, request, tmp_path_factory.mktemp("cache"))
    sandbox.prepare(root)
    with sandbox.open() as session:
        runner = SuiteRunner(session, sandbox.plan.import_roots)
        baseline = run_baseline(runner, reruns=0, timeout=300)
        cands = _candidates(root)
        slow = {case: cand.model_copy(deep=True) for case, cand in cands.items()}
        gate = GateRunner(runner, baseline, timeout=TIMEOUT_SEC)
        for cand in slow.values():
            gate.check(cand)
        fast = {case: cand.model_copy(deep=True) for case, cand in cands.items()}
        batch = BatchGateRunner(runner, baseline, timeout=TIMEOUT_SEC, workers=2)
        returned = batch.check_many(list(fast.values()))
        assert returned == list(fast.values())
        yield request.param, slow, fast, dict(batch.results), batch.last_summary


@pytest.mark.parametrize("case", list(CASES))
def test_batch_verdicts_equal_subprocess_verdicts(gated, case):
    kind, slow, fast, results, _ = gated
    expected, mode = CASES[case][4:]
    assert _verdict(slow[case]) == expected, f"{kind}: the subprocess gate itself says {_verdict(slow[case])}"
    assert _verdict(fast[case]) == expected
    for field in ("status", "killed", "skip_reason", "covering_tests", "line_tests", "baseline"):
        assert getattr(fast[case], field) == getattr(slow[case], field), field
    assert [(g.gate, g.passed) for g in fast[case].gates] == [(g.gate, g.passed) for g in slow[case].gates]
    on_b = [(g.detail for g in c.gates if g.gate == "covering tests on B") for c in (fast[case], slow[case])]
    assert list(on_b[0]) == list(on_b[1])
    result = results.get(fast[case].candidate_id)
    if case in ("does not compile", "two files changed"):
        assert result is None  # dropped on the host, or judged by GateRunner: never sent to the worker
    elif case == "child dies":
        assert result is not None and result.status == WorkerStatus.error  # then re-run by GateRunner
    else:
        assert result is not None and result.mode == mode, result


def test_one_worker_exec_judged_the_batch(gated):
    kind, _, _, results, summary = gated
    assert summary["exit_code"] == 0, summary
    # Every compiling single-module candidate went to the one worker run.
    assert summary["jobs"] == len(CASES) - 2
    assert sum(summary["statuses"].values()) == len(results) == len(CASES) - 2
    assert summary["statuses"][WorkerStatus.timeout.value] == 1


def test_swap_path_jobs_ran_in_the_warm_session(gated):
    """Every job the worker swapped ran its items in the warm-up's own session, without a pytest start."""
    kind, _, fast, results, _ = gated
    swapped = [case for case, row in CASES.items() if row[5] == "swap"]
    assert {case: results[fast[case].candidate_id].detail for case in swapped} == dict.fromkeys(swapped, LIVE_DETAIL)
    # The job of `settle` is its last test alone, while the warm session holds a test after it in the file.
    assert fast["module fixture torn down by the job's last test"].line_tests == ["tests/test_live.py::test_settle"]
    assert "tests/test_live.py::test_zz_defined_early" in fast["tmp_path in a child"].line_tests


# Collected only when pytest is given one test: the warm-up (all the batch's tests) never holds it.
CONFTEST_ALONE = '''\
def pytest_collection_modifyitems(config, items):
    if len(config.args) > 1:
        items[:] = [item for item in items if item.name != "test_alone"]
'''

TESTS_ALONE = '''\
from tinypkg.core import add


def test_alone():
    assert add(1, 1) == 2
'''


def test_a_test_the_warm_session_did_not_collect_runs_through_pytest_main(tmp_path):
    """A job naming a test the warm-up did not collect gets a `pytest.main` child, and the verdict of a
    plain pytest run with B on disk; the batch's other jobs still run in the warm session."""
    root = tmp_path / "repo"
    _write_repo(root, {"tests/conftest.py": CONFTEST_ALONE, "tests/test_alone.py": TESTS_ALONE})
    mutated = CORE.replace("return a + b", "return a - b")
    jobs = [{"id": "alone", "tests": ["tests/test_alone.py::test_alone"]},
            {"id": "core", "tests": ["tests/test_core.py::test_add", "tests/test_core.py::test_add_again"]}]
    spec = {"rootdir": str(root), "basetemp": str(tmp_path / "scratch"), "workers": 2, "exitfirst": True,
            "jobs": [dict(job, path=CORE_PY, module="tinypkg.core", qualname="add", mutated_source=mutated,
                          timeout_sec=TIMEOUT_SEC) for job in jobs]}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    worker = payload_dir(WORKER_PACKAGE) / WORKER_NAME
    env = {**os.environ, "PYTHONPATH": str(root)}
    run = subprocess.run([sys.executable, str(worker), "--spec", str(tmp_path / "spec.json"),
                          "--out", str(tmp_path / "out.jsonl")], cwd=root, env=env, capture_output=True, timeout=120)
    assert run.returncode == 0, run.stderr
    results = {r["id"]: r for r in map(json.loads, (tmp_path / "out.jsonl").read_text().splitlines())}
    assert (results["alone"]["status"], results["alone"]["mode"]) == ("killed", "swap")
    assert results["alone"]["detail"] != LIVE_DETAIL
    assert (results["core"]["status"], results["core"]["detail"]) == ("killed", LIVE_DETAIL)
    # The subprocess verdict it must equal: B on disk, the test run alone, fails.
    (root / CORE_PY).write_text(mutated)
    plain = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                            "tests/test_alone.py::test_alone"], cwd=root, env=env, capture_output=True, timeout=120)
    assert plain.returncode == 1, plain.stdout


def test_worker_is_standalone():
    """The worker runs inside sandboxes where repo2rlenv is not installed: its modules import the standard
    library, pytest and each other (the whole folder is shipped), nothing else."""
    names = payload_names(WORKER_PACKAGE)
    assert WORKER_NAME in names and len(names) > 1
    siblings = {name[:-3] for name in names}
    imported = set()
    for name in names:
        tree = ast.parse((payload_dir(WORKER_PACKAGE) / name).read_text())
        imported |= {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                     for alias in node.names}
        imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                     if isinstance(node, ast.ImportFrom) and node.module}
    assert "pytest" in imported
    assert siblings - {WORKER_NAME[:-3]} <= imported  # every sibling is used by another module
    assert imported - {"pytest"} - siblings <= sys.stdlib_module_names
    assert all(name.startswith("gate_") for name in names)  # they must not shadow the repo's modules


def test_gates_stop_at_the_first_test_that_notices_b(gated):
    """Both covering tests of `add` fail on B; the gates run only until the first one does."""
    kind, slow, fast, results, _ = gated
    for cand in (fast["killed"], slow["killed"]):
        assert len(cand.line_tests) == 2
        detail = next(g.detail for g in cand.gates if g.gate == "covering tests on B")
        assert detail.startswith("2 run, 1 noticed B"), (kind, detail)
    assert len(results[fast["killed"].candidate_id].failing) == 1


def test_a_looping_mutant_is_stopped_at_its_scaled_timeout(gated):
    """The covering tests of `countdown` take milliseconds on A, so the endless loop is cut at about the
    floor (2 s), not at the flat cap."""
    kind, _, fast, results, _ = gated
    result = results[fast["infinite loop"].candidate_id]
    assert result.status == WorkerStatus.timeout
    assert result.duration < TIMEOUT_SEC - 3, (kind, result.duration)


def test_gate_timeouts_scale_with_the_baseline_and_stay_under_the_cap():
    from repo2rlenv.baseline.coverage_map import CoverageMap
    from repo2rlenv.baseline.runner import BaselineReport

    baseline = BaselineReport(total=3, stable_passing=["a", "b", "c"], quarantined={}, coverage=CoverageMap(),
                              duration_sec=1.0, durations={"a": 0.5, "b": 1.5, "c": 100.0})
    timeouts = GateTimeouts(cap=60.0, factor=10.0, floor=3.0)
    assert timeouts.for_tests(baseline, ["a", "b"]) == pytest.approx(23.0)
    assert timeouts.for_tests(baseline, ["unknown"]) == pytest.approx(3.0)
    assert timeouts.for_tests(baseline, ["c"]) == 60.0


def test_failing_tests_after_a_stop_at_first_failure():
    tests = ["t1", "t2", "t3"]
    assert failing_tests(tests, {"t1": True, "t2": False}) == ["t2"]  # t3 never ran: -x stopped
    assert failing_tests(tests, {"t1": True, "t2": True, "t3": True}) == []
    # Nothing ran and failed, but not everything ran (a collection error): never "B survives".
    assert failing_tests(tests, {"t1": True}) == ["t2", "t3"]
    assert failing_tests(tests, {}) == tests

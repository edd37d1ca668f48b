"""Run a repo's pytest suite inside a sandbox session and read back outcomes and per-test coverage.

Outcomes come from our plugin's report hook (every phase and subtest of a test; `outcomes.py`), with
pytest's JUnit XML as the fallback, coverage from coverage.py's JSON report with per-test contexts. The
repo's pytest configuration is honoured, minus what breaks those (`discovery.pytest_setup`). The
baseline runs the suite on A once with coverage and then
`reruns` more times without it: tests that fail or flip are quarantined (never used as gates).
"""

from __future__ import annotations

import json
import posixpath
import uuid
from typing import Callable

from pydantic import BaseModel, ConfigDict, Field

from repo2rlenv.baseline.coverage_map import CoverageMap, parse_coverage_json
from repo2rlenv.baseline.junit import Outcome, TestResult, parse_junit
from repo2rlenv.baseline.network import NEEDS_NETWORK, needs_network
from repo2rlenv.baseline.outcomes import CollectionError, parse_outcomes
from repo2rlenv.discovery.pytest_setup import (TEST_DIR_DEPTH, TEST_DIR_NAMES, PytestSetup, read_pytest_config,
                                               suite_paths, with_root_suite)
from repo2rlenv.errors import BaselineError, SandboxError
from repo2rlenv.payload import payload_files
from repo2rlenv.sandbox.base import ExecResult, Session

PLUGIN_NAME = "r2e_pytest_plugin"
# The payload folder the plugin is shipped from (payload.py): copied into every session's plugin dir.
PLUGIN_PACKAGE = "repo2rlenv.baseline.r2e_plugin"
# pytest's own exit codes (pytest.ExitCode), spelled out so we need not import pytest on the host.
PYTEST_NO_TESTS = 5
PYTEST_OK_CODES = (0, 1)

_COVERAGE_RC = """\
[run]
branch = True
relative_files = True
data_file = {data_file}
source =
{sources}
omit =
    */tests/*
    */test/*
    */testing/*
    */test_*.py
    */*_test.py
    */conftest.py
"""


# Lists directories named like a suite's, at most DEPTH deep, skipping hidden, build and environment dirs.
# Test files at the root are part of the suite too, so then nothing is listed (no narrowing).
_LIST_TEST_DIRS = """
import ast, fnmatch, json, os, sys
names, depth = set(ast.literal_eval(sys.argv[1])), int(sys.argv[2])
skip = {"node_modules", "build", "dist", "site-packages", "__pycache__", "venv"}
found = []
for top, dirs, files in os.walk("."):
    level = 0 if top == "." else top.count(os.sep)
    if level == 0 and any(fnmatch.fnmatch(f, "test_*.py") or fnmatch.fnmatch(f, "*_test.py") for f in files):
        break
    dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in skip) if level < depth else []
    found += [os.path.join(top, d)[2:] for d in dirs if d in names]
print(json.dumps(found))
"""


class SuiteRun(BaseModel):
    """One pytest run: per-test results, and coverage when it was measured."""

    model_config = ConfigDict(extra="forbid")

    results: dict[str, TestResult] = Field(default_factory=dict)
    exit_code: int
    timed_out: bool = False
    duration_sec: float = 0.0
    coverage: CoverageMap | None = None
    output_tail: str = ""
    collection_errors: list[CollectionError] = Field(default_factory=list)

    def passed(self) -> set[str]:
        return {n for n, r in self.results.items() if r.outcome == Outcome.passed}

    def not_passed(self) -> set[str]:
        return {n for n, r in self.results.items() if r.outcome in (Outcome.failed, Outcome.error)}


class BaselineReport(BaseModel):
    """The existing suite on A: which tests are stable gates, and who covers what."""

    model_config = ConfigDict(extra="forbid")

    # History: 1 = first version. 2 = needs_network, collection_errors.
    schema_version: int = 2
    total: int
    stable_passing: list[str] = Field(description="Tests that passed in every baseline run.")
    quarantined: dict[str, str] = Field(description="Test → why it is never used as a gate.")
    needs_network: list[str] = Field(default_factory=list,
                                     description="Quarantined tests that failed for want of a network.")
    collection_errors: dict[str, str] = Field(
        default_factory=dict, description="Files pytest could not collect → the error; the rest of the suite ran.")
    skipped: list[str] = Field(default_factory=list)
    coverage: CoverageMap
    duration_sec: float
    durations: dict[str, float] = Field(
        default_factory=dict,
        description="Test → seconds in the last baseline run (a run without coverage when there was one); "
                    "gate timeouts are scaled from these.")
    set_aside: dict[str, str] = Field(
        default_factory=dict, description="Slow test files left out of every run → why (SLOW_FILE_RULE).")

    def tests_duration(self, tests: list[str]) -> float:
        """Seconds the baseline spent in `tests` (unknown tests count as 0)."""
        return sum(self.durations.get(t, 0.0) for t in tests)


class SuiteRunner:
    """Runs pytest in one session, in the workspace or in a copy of it."""

    def __init__(self, session: Session, import_roots: list[str], pytest_setup: PytestSetup | None = None):
        self.session = session
        self.import_roots = import_roots or [""]
        self.pytest_setup = pytest_setup if pytest_setup is not None else with_root_suite(
            read_pytest_config(self._read_repo_file), self._read_repo_file)
        # What a whole-suite run collects (empty: what pytest collects by itself); runs of named tests
        # are not narrowed.
        self.suite_paths = suite_paths(self.pytest_setup, self._test_dirs())
        self.set_aside: list[str] = []  # slow test files no run collects (run_baseline decides them)
        self.plugin_dir = posixpath.join(session.scratch, "plugins")
        session.write_files({posixpath.join(self.plugin_dir, name): text
                             for name, text in payload_files(PLUGIN_PACKAGE).items()})

    def _read_repo_file(self, rel: str) -> str | None:
        data = self.session.read_file(posixpath.join(self.session.workspace, rel))
        return data.decode("utf-8", "replace") if data is not None else None

    def _test_dirs(self) -> list[str]:
        """The workspace's directories named like a suite's (`pytest_setup.TEST_DIR_NAMES`), relative."""
        res = self.session.exec([self.session.python, "-c", _LIST_TEST_DIRS, repr(TEST_DIR_NAMES),
                                 str(TEST_DIR_DEPTH)], cwd=self.session.workspace, timeout=60)
        try:
            found = json.loads(res.stdout) if res.exit_code == 0 else []
        except ValueError:
            found = []
        return [d for d in found if isinstance(d, str)]

    def pytest_args(self) -> list[str]:
        """The options every pytest run of this repo gets (the gate worker's too)."""
        return ["-p", "no:cacheprovider", *self.pytest_setup.args()]

    def pythonpath(self, root: str) -> str:
        roots = [posixpath.join(root, r) if r else root for r in self.import_roots]
        return ":".join([self.plugin_dir, *roots])

    def run(self, *, root: str | None = None, tests: list[str] | None = None, with_coverage: bool = False,
            timeout: float, extra_args: list[str] | None = None,
            slow_rule: tuple[float, int] | None = None, deselect: list[str] | None = None) -> SuiteRun:
        """Run `tests` (default: the whole suite) with the repo at `root` (default: the workspace), without
        the files `set_aside` and the node ids `deselect` (exactly those); `slow_rule` (mean seconds,
        tests): skip the rest of a file that slow."""
        root = root or self.session.workspace
        run_dir = posixpath.join(self.session.scratch, "runs", uuid.uuid4().hex[:10])
        junit = posixpath.join(run_dir, "junit.xml")
        outcomes = posixpath.join(run_dir, "outcomes.jsonl")
        pytest_args = ["-m", "pytest", "-p", PLUGIN_NAME, *self.pytest_args(), f"--rootdir={root}",
                       f"--junitxml={junit}", "-o", "junit_family=xunit2", "-q", "--no-header",
                       "-W", "ignore::pytest.PytestAssertRewriteWarning", *(extra_args or []),
                       *(tests or self.suite_paths)]
        files: dict[str, str] = {posixpath.join(run_dir, ".keep"): ""}
        if with_coverage:
            rc = posixpath.join(run_dir, "coveragerc")
            sources = "\n".join(f"    {posixpath.join(root, r) if r else root}" for r in self.import_roots)
            files[rc] = _COVERAGE_RC.format(data_file=posixpath.join(run_dir, ".coverage"), sources=sources)
            argv = [self.session.python, "-m", "coverage", "run", f"--rcfile={rc}", *pytest_args]
        else:
            argv = [self.session.python, *pytest_args]
        self.session.write_files(files)
        env = {"PYTHONPATH": self.pythonpath(root), "R2E_OUTCOMES": outcomes}
        if self.set_aside:
            env["R2E_DESELECT"] = posixpath.join(run_dir, "deselect.txt")
            self.session.write_files({env["R2E_DESELECT"]: "\n".join(self.set_aside) + "\n"})
        if deselect:
            env["R2E_DESELECT_IDS"] = posixpath.join(run_dir, "deselect_ids.txt")
            self.session.write_files({env["R2E_DESELECT_IDS"]: "\n".join(deselect) + "\n"})
        if slow_rule is not None:
            env["R2E_SLOW"] = f"{slow_rule[0]},{slow_rule[1]}"
        result = self.session.exec(argv, cwd=root, env=env, timeout=timeout)
        run = self._collect(result, junit, outcomes)
        if with_coverage and not result.timed_out:
            out = posixpath.join(run_dir, "coverage.json")
            rep = self.session.exec([self.session.python, "-m", "coverage", "json", f"--rcfile={rc}",
                                     "--show-contexts", "-q", "-o", out], cwd=root, env=env, timeout=timeout)
            data = self.session.read_file(out)
            if rep.exit_code != 0 or data is None:
                raise SandboxError(f"coverage report failed: {rep.tail(5)}")
            run.coverage = parse_coverage_json(data.decode())
        self.session.exec(["rm", "-rf", run_dir], timeout=30)
        return run

    def _collect(self, result: ExecResult, junit_path: str, outcomes_path: str) -> SuiteRun:
        results: dict[str, TestResult] = {}
        errors: list[CollectionError] = []
        lines = self.session.read_file(outcomes_path)
        if lines:
            results, errors = parse_outcomes(lines.decode("utf-8", "replace"))
        data = None if results or errors else self.session.read_file(junit_path)
        if data:
            try:
                results = parse_junit(data.decode("utf-8", "replace"))
            except ValueError:
                results = {}
        return SuiteRun(results=results, exit_code=result.exit_code, timed_out=result.timed_out,
                        duration_sec=result.duration_sec, output_tail=result.tail(60), collection_errors=errors)


def _failed(run: SuiteRun, message: str) -> BaselineError:
    """The baseline's error, with pytest's own output for the log (`output`, read by the CLI)."""
    err = BaselineError(message)
    err.output = run.output_tail  # type: ignore[attr-defined]  # set so on every version of the hierarchy
    return err


# A test file whose first 3 tests took 2 s each or more (under coverage) is left out of the suite's runs:
# mypy run per case (pydash), a server started per case. Its tests are never gates; the rest of the suite
# finishes. Decided once, in the baseline's first run; every later run leaves the same files out.
SLOW_FILE_RULE = (2.0, 3)
SET_ASIDE = "r2e: set aside, a slow test file"  # the plugin's skip reason (r2e_pytest_plugin.SET_ASIDE)


def _set_aside(run: SuiteRun) -> dict[str, str]:
    """Test files the slow-file rule cut short in `run` → the plugin's reason."""
    return {nodeid.split("::")[0]: res.message.partition(SET_ASIDE)[2].strip(" ()") or "slow"
            for nodeid, res in run.results.items()
            if res.outcome == Outcome.skipped and SET_ASIDE in (res.message or "")}


def run_baseline(runner: SuiteRunner, *, reruns: int, timeout: float,
                 progress: Callable[[str], None] | None = None, tests: list[str] | None = None) -> BaselineReport:
    """Run the suite on A with coverage, rerun it, and sort tests into gates and quarantine. `tests`: the
    test files (or node ids) to run instead of the whole suite."""
    say = progress or (lambda _msg: None)
    say("running the existing suite with per-test coverage" if tests is None
        else f"running {len(tests)} test file(s) of the suite with per-test coverage")
    first = runner.run(with_coverage=True, timeout=timeout, tests=tests, slow_rule=SLOW_FILE_RULE)
    aside = _set_aside(first)
    if aside:
        say(f"{len(aside)} slow test file(s) set aside: " + ", ".join(sorted(aside)[:3]) + ("…" if len(aside) > 3 else ""))
        runner.set_aside = sorted(aside)
        first.results = {n: r for n, r in first.results.items() if n.split("::")[0] not in aside}
    if first.timed_out:
        raise _failed(first, f"the test suite did not finish within {timeout:.0f}s (suite_timeout_sec)")
    if first.exit_code == PYTEST_NO_TESTS or not first.results:
        if first.collection_errors and first.exit_code in PYTEST_OK_CODES:
            err = first.collection_errors[0]
            raise _failed(first, f"pytest collected no test: {len(first.collection_errors)} files failed to "
                                f"collect, first {err.nodeid}: {err.message}")
        if first.exit_code not in PYTEST_OK_CODES + (PYTEST_NO_TESTS,):
            raise _failed(first, f"pytest could not run the suite (exit {first.exit_code}): "
                                f"{first.output_tail.splitlines()[-1] if first.output_tail else 'no output'}")
        raise _failed(first, "the repository has no tests pytest can collect")
    runs = [first]
    for i in range(reruns):
        say(f"rerunning the suite to find flaky tests ({i + 1}/{reruns})")
        runs.append(runner.run(timeout=timeout, tests=tests))
    quarantined: dict[str, str] = {}
    offline: list[str] = []
    skipped: list[str] = []
    for nodeid, res in first.results.items():
        outcomes = [r.results.get(nodeid).outcome if nodeid in r.results else None for r in runs]
        if res.outcome == Outcome.skipped:
            skipped.append(nodeid)
        elif all(o == Outcome.passed for o in outcomes):
            continue
        elif any(o == Outcome.passed for o in outcomes):
            quarantined[nodeid] = "flaky: outcome changed between baseline runs"
        elif needs_network(res.failure_text or res.message):
            # Sandboxes have no network: such a test is not wrong, it cannot be a gate here.
            quarantined[nodeid] = f"{NEEDS_NETWORK}: {res.message or res.outcome.value}"
            offline.append(nodeid)
        else:
            quarantined[nodeid] = f"fails at the ref: {res.message or res.outcome.value}"
    stable = sorted(n for n in first.results if n not in quarantined and n not in skipped)
    collect_errors = {e.nodeid: e.message for e in first.collection_errors}
    if not stable:
        raise _failed(first, f"no test passes at the ref ({len(first.results)} collected, all failing, "
                            "flaky or skipped" + (f"; {len(offline)} need the network" if offline else "")
                            + (f"; {len(collect_errors)} files could not be collected, first "
                               f"{next(iter(collect_errors))}: {next(iter(collect_errors.values()))}"
                               if collect_errors else "") + ")")
    return BaselineReport(total=len(first.results), stable_passing=stable, quarantined=quarantined,
                          needs_network=sorted(offline), collection_errors=collect_errors,
                          skipped=sorted(skipped), coverage=first.coverage or CoverageMap(), set_aside=aside,
                          duration_sec=sum(r.duration_sec for r in runs),
                          # Coverage tracing slows tests down several times; a rerun without it is closer
                          # to what a gate run costs.
                          durations={n: r.duration_sec for n, r in runs[-1].results.items()})

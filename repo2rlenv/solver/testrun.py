"""Run the agent's tests in the sandbox: outcomes from JUnit XML, coverage of the target function.

Built on the baseline's `SuiteRunner` (same pytest plugin, node ids and coverage settings), with the
full text of each failure kept from the JUnit XML, because a repair prompt needs more than its first
line. The existing suite runs once up front (`measure_baseline`), so feedback can name the function's
lines that no test reaches yet — the lines the task's coverage term pays for.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from pydantic import BaseModel, ConfigDict, Field

from repo2rlenv.baseline.junit import Outcome, case_nodeid
from repo2rlenv.baseline.runner import PYTEST_NO_TESTS, SuiteRun, SuiteRunner
from repo2rlenv.errors import SandboxError
from repo2rlenv.pysource.functions import FunctionRecord
from repo2rlenv.sandbox.base import ExecResult, Session
from repo2rlenv.solver.target import Target

TIMEOUT_CASE = "<timeout>"
NO_TESTS_CASE = "<no tests collected>"
PYTEST_FAILED_CASE = "<pytest failed>"


class CaseOutcome(BaseModel):
    """One test case of the agent's file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    nodeid: str
    outcome: Outcome
    detail: str = Field("", description="Failure or error text (message and traceback).")


class TestReport(BaseModel):
    """One run of the agent's tests, or the lint findings that kept it from running."""

    model_config = ConfigDict(extra="forbid")
    __test__ = False

    test_paths: list[str]
    ran: bool = Field(description="False when the lint refused the file before any run.")
    lint: list[str] = Field(default_factory=list, description="Lint findings, 'line N: rule: message'.")
    cases: list[CaseOutcome] = Field(default_factory=list)
    exit_code: int | None = None
    timed_out: bool = False
    duration_sec: float = 0.0
    output_tail: str = ""
    function_lines: list[int] = Field(description="The target function's executable lines.")
    baseline_covered: list[int] | None = Field(description="Lines the existing suite runs; None = unknown.")
    covered: list[int] = Field(default_factory=list, description="Function lines these tests ran.")
    coverage_measured: bool = Field(True, description="False under --no-coverage: `covered` is not known.")

    def failing(self) -> list[str]:
        return [c.nodeid for c in self.cases if c.outcome in (Outcome.failed, Outcome.error)]

    def passed(self) -> list[str]:
        return [c.nodeid for c in self.cases if c.outcome == Outcome.passed]

    def targets(self) -> list[int]:
        """Lines worth covering: the function's lines the existing suite leaves unexecuted."""
        base = set(self.baseline_covered or [])
        return [ln for ln in self.function_lines if ln not in base]

    def new_coverage(self) -> list[int]:
        return sorted(set(self.covered) & set(self.targets()))

    def uncovered(self) -> list[int]:
        return sorted(set(self.targets()) - set(self.covered))

    def succeeded(self) -> bool:
        """All cases pass (there is at least one), they run the function (a test that never calls it can
        catch nothing the verifier pays for), and they add coverage, unless there is none to add."""
        passing = self.ran and not self.lint and bool(self.passed()) and not self.failing()
        if not self.coverage_measured:
            return passing
        return passing and bool(self.covered) and (not self.targets() or bool(self.new_coverage()))

    def signature(self) -> tuple[tuple[str, ...], tuple[int, ...]]:
        """What two rounds must share to count as no progress: the failing set (and coverage)."""
        return tuple(sorted(self.failing())), tuple(sorted(self.covered))

    def summary(self) -> str:
        if not self.ran:
            return f"refused by lint ({len(self.lint)} finding(s))"
        text = f"{len(self.passed())} passed, {len(self.failing())} failing"
        if self.timed_out:
            text += ", timed out"
        if not self.coverage_measured:
            return text + "; coverage not measured"
        if not self.targets():
            return text + "; the existing tests already run every line"
        return text + f"; runs {len(self.new_coverage())} of the {len(self.targets())} lines the existing tests miss"


class _KeepingRunner(SuiteRunner):
    """A `SuiteRunner` that also keeps the last run's JUnit XML and `SuiteRun` (see module docstring)."""

    last_junit: bytes | None = None
    last_run: SuiteRun | None = None

    def _collect(self, result: ExecResult, junit_path: str, outcomes_path: str) -> SuiteRun:
        run = super()._collect(result, junit_path, outcomes_path)
        self.last_junit = self.session.read_file(junit_path)
        self.last_run = run
        return run


def failure_texts(xml: bytes | None) -> dict[str, str]:
    """Node id → message and traceback of each failed or errored case."""
    if not xml:
        return {}
    try:
        root = ET.fromstring(xml.decode("utf-8", "replace"))
    except ET.ParseError:
        return {}
    out: dict[str, str] = {}
    for case in root.iter("testcase"):
        nodeid = case_nodeid(case)
        for tag in ("failure", "error"):
            node = case.find(tag)
            if node is not None and nodeid not in out:
                out[nodeid] = "\n".join(t for t in ((node.get("message") or "").strip(), (node.text or "").strip()) if t)
    return out


class TestBench:
    """Runs tests for one target in one session."""

    __test__ = False

    def __init__(self, session: Session, target: Target, function: FunctionRecord, *, timeout: float,
                 coverage: bool = True, selection: list[str] | None = None):
        """`coverage=False` runs without coverage.py; `selection` (-k/-m arguments) narrows every run."""
        self.session = session
        self.target = target
        self.function = function
        self.timeout = timeout
        self.coverage = coverage
        self.selection = list(selection or [])
        self.runner = _KeepingRunner(session, target.import_roots)
        self.baseline_covered: list[int] | None = None

    def _function_lines_run(self, run: SuiteRun) -> list[int]:
        if run.coverage is None:
            return []
        executed = run.coverage.covered_lines(self.target.path)
        return sorted(set(self.function.body_lines) & executed)

    def measure_baseline(self, timeout: float) -> list[int] | None:
        """Function lines the existing suite runs (None when it could not be measured)."""
        try:
            run = self.runner.run(with_coverage=True, timeout=timeout, extra_args=self.selection)
        except SandboxError:
            return None
        if run.timed_out or run.coverage is None:
            return None
        self.baseline_covered = self._function_lines_run(run)
        return self.baseline_covered

    def refused(self, test_paths: list[str], findings: list[str]) -> TestReport:
        return TestReport(test_paths=test_paths, ran=False, lint=findings, function_lines=self.function.body_lines,
                          baseline_covered=self.baseline_covered)

    def run(self, test_paths: list[str]) -> TestReport:
        self.runner.last_run, self.runner.last_junit = None, None
        try:
            run = self.runner.run(tests=test_paths, with_coverage=self.coverage, timeout=self.timeout,
                                  extra_args=["--tb=short", *self.selection])
        except SandboxError:
            # `coverage json` finds no data when nothing of the package ran (an import error, say).
            if self.runner.last_run is None:
                raise
            run = self.runner.last_run
        texts = failure_texts(self.runner.last_junit)
        cases = [CaseOutcome(nodeid=n, outcome=r.outcome, detail=texts.get(n, r.message))
                 for n, r in sorted(run.results.items())]
        if run.timed_out:
            cases.append(CaseOutcome(nodeid=TIMEOUT_CASE, outcome=Outcome.error, detail=(
                f"the test run did not finish within {self.timeout:.0f}s: a test hangs or is far too slow")))
        elif not cases:
            deselected = " (or -k/-m deselected them all)" if self.selection else ""
            name, what = ((NO_TESTS_CASE, f"pytest collected no tests from the file{deselected}")
                          if run.exit_code == PYTEST_NO_TESTS else (PYTEST_FAILED_CASE, f"pytest exited {run.exit_code}"))
            cases.append(CaseOutcome(nodeid=name, outcome=Outcome.error, detail=f"{what}:\n{run.output_tail}"))
        return TestReport(test_paths=test_paths, ran=True, cases=cases, exit_code=run.exit_code,
                          timed_out=run.timed_out, duration_sec=run.duration_sec, output_tail=run.output_tail,
                          function_lines=self.function.body_lines, baseline_covered=self.baseline_covered,
                          covered=self._function_lines_run(run), coverage_measured=self.coverage)

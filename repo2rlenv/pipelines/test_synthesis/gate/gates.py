"""Gates: cheap checks, in the sandbox, that a candidate is a real test gap.

All gate runs of a repo share one warm session and one work copy of A (`/…/r2e/gate`): each candidate's
B files are written over it, its covering tests run, and A's files are put back. Cheapest first:
the mutant compiles (host) → the covering tests run on B → if any fails, an import check tells
"breaks import" from "killed".
"""

from __future__ import annotations

import posixpath
import time
from dataclasses import dataclass

from repo2rlenv.baseline.runner import BaselineReport, SuiteRunner
from repo2rlenv.pipelines.test_synthesis.candidates import (
    BaselineCoverage,
    Candidate,
    Drop,
    GateResult,
    SkipReason,
)
from repo2rlenv.pysource.functions import FunctionRecord

# A fresh pytest process (GateRunner) spends this long starting before the first test runs.
_SUBPROCESS_STARTUP_SEC = 5.0
# Gates stop at the first covering test that notices B: whether B is killed is all a gate needs to know,
# and most mutants are killed, so running the rest of their tests is most of a naive gate's time.
EXITFIRST_ARGS = ["-x"]


@dataclass(frozen=True, slots=True)
class GateVerdict:
    """What the gates on B decided for one candidate: the gate results to record, whether the covering
    tests noticed B, and the drop when B cannot be a task. Both runners (`GateRunner` here, the batch
    worker's `batch.BatchGateRunner`) decide through the constructors below, so one outcome is recorded
    one way, and `apply` is the one place the gates write a candidate's fate."""

    gates: tuple[GateResult, ...] = ()
    killed: bool | None = None
    drop: Drop | None = None

    def apply(self, cand: Candidate) -> Candidate:
        cand.gates.extend(self.gates)
        if self.killed is not None:
            cand.killed = self.killed
        if self.drop is not None:
            cand.apply(self.drop)
        else:
            cand.status = "kept"
        return cand


def import_broken(detail: str, duration: float, *, tests: list[str]) -> GateVerdict:
    """B breaks the module's import. With no covering test the import check was the gate, and is recorded;
    otherwise it only told a failing run's cause."""
    gates = () if tests else (GateResult(gate="imports", passed=False, detail=detail, duration_sec=duration),)
    return GateVerdict(gates=gates, drop=Drop(SkipReason.breaks_import, detail))


def imports_fine(duration: float) -> GateVerdict:
    """No covering test to run: B imports, and nothing notices it."""
    return GateVerdict(gates=(GateResult(gate="imports", passed=True, duration_sec=duration),), killed=False)


def timed_out(duration: float) -> GateVerdict:
    return GateVerdict(gates=(GateResult(gate="covering tests on B", passed=False, detail="timed out",
                                         duration_sec=duration),),
                       killed=True, drop=Drop(SkipReason.timeout_on_b))


def covering_ran(tests: list[str], failing: list[str], duration: float) -> GateVerdict:
    """The covering tests ran on B; `failing` those that noticed it (a run stops at the first)."""
    detail = f"{len(tests)} run, {len(failing)} noticed B" + (f": {failing[0]}" if failing else "")
    return GateVerdict(gates=(GateResult(gate="covering tests on B", passed=not failing, duration_sec=duration,
                                         detail=detail),), killed=bool(failing))


@dataclass(frozen=True)
class GateTimeouts:
    """Wall clock for a mutant's covering tests, scaled from what they took on A.

    A mutant that makes a loop endless must not hold a gate slot for the full `cap`: like mutmut, allow
    `factor` times the tests' baseline duration plus `floor` (start-up, a slow machine), never more than
    `cap`.
    """

    cap: float
    factor: float = 10.0
    floor: float = 2.0

    def for_tests(self, baseline: BaselineReport, tests: list[str]) -> float:
        return min(self.cap, self.floor + self.factor * baseline.tests_duration(tests))


def failing_tests(tests: list[str], ran: dict[str, bool]) -> list[str]:
    """Covering tests that noticed B, given `ran` (test → passed) of a run that may have stopped at
    the first failure. When no run test failed but some never ran (a collection error, a crash), those
    count as failing: a test that did not pass is never read as "B survives"."""
    failed = [t for t in tests if t in ran and not ran[t]]
    return failed or [t for t in tests if not ran.get(t, False)]


def function_lines(baseline: BaselineReport, func: FunctionRecord) -> list[int]:
    """Executable lines of the function body on A (coverage.py's view when it has one)."""
    span = set(range(func.lineno + 1, func.end_lineno + 1))
    lines = baseline.coverage.executable_lines(func.path, span)
    return sorted(lines) if lines else sorted(func.body_lines)


def baseline_coverage(baseline: BaselineReport, func: FunctionRecord) -> BaselineCoverage:
    lines = function_lines(baseline, func)
    stable = set(baseline.stable_passing)
    covered = baseline.coverage.covered_lines(func.path, lines, by=stable)
    return BaselineCoverage(function_lines=lines, covered_lines=sorted(covered))


def import_time_only(baseline: BaselineReport, func: FunctionRecord) -> bool:
    """Whether the function ran while the suite ran, but only at import time (a rule-table builder, a class
    factory in a class statement): coverage saw its lines executed outside every test's context."""
    lines = function_lines(baseline, func)
    return not baseline.coverage.tests_covering(func.path, lines) and bool(baseline.coverage.covered_lines(func.path, lines))


def prepare_candidate(cand: Candidate, baseline: BaselineReport, stable: set[str]) -> bool:
    """The host-side gates every gate runner shares: baseline coverage of the function, its covering
    tests (whole function, and the changed line), and "B compiles". False when `cand` was dropped."""
    func = cand.function
    cand.baseline = baseline_coverage(baseline, func)
    covering = baseline.coverage.tests_covering
    cand.covering_tests = sorted(covering(func.path, function_lines(baseline, func)) & stable)
    line_tests = covering(func.path, [cand.line]) & stable if cand.line else set(cand.covering_tests)
    # Fastest first, as mutmut does: gates stop at the first test that notices B.
    cand.line_tests = sorted(line_tests, key=lambda t: (baseline.durations.get(t, 0.0), t))
    if import_time_only(baseline, func):
        cand.apply(Drop(SkipReason.import_time, "its lines ran while the suite imported the package, inside no test: "
                        "no test's outcome depends on it alone and no test calls it, so neither a gate nor an "
                        "oracle can be built from the suite"))
        return False
    for rel, text in cand.files_b.items():
        try:
            compile(text, rel, "exec")
        except SyntaxError as exc:
            cand.apply(Drop(SkipReason.does_not_compile, str(exc)))
            return False
    cand.gates.append(GateResult(gate="compiles", passed=True))
    return True


class GateRunner:
    """Runs the gates of many candidates in one session."""

    def __init__(self, runner: SuiteRunner, baseline: BaselineReport, *, timeout: float | GateTimeouts):
        self.runner = runner
        self.session = runner.session
        self.baseline = baseline
        self.timeouts = timeout if isinstance(timeout, GateTimeouts) else GateTimeouts(cap=timeout)
        self.timeout = self.timeouts.cap
        self.stable = set(baseline.stable_passing)
        self.root = posixpath.join(self.session.scratch, "gate")
        res = self.session.exec(["cp", "-a", self.session.workspace, self.root], timeout=300)
        if res.exit_code != 0:
            raise RuntimeError(f"cannot make the gate work copy: {res.tail(3)}")

    def covering(self, func: FunctionRecord, lines: list[int]) -> list[str]:
        return sorted(self.baseline.coverage.tests_covering(func.path, lines) & self.stable)

    def _swap_in(self, files: dict[str, str]) -> dict[str, bytes]:
        originals = {}
        for rel in files:
            data = self.session.read_file(posixpath.join(self.session.workspace, rel))
            originals[rel] = data if data is not None else b""
        self.session.write_files({posixpath.join(self.root, rel): text for rel, text in files.items()})
        return originals

    def _restore(self, originals: dict[str, bytes]) -> None:
        self.session.write_files({posixpath.join(self.root, rel): data for rel, data in originals.items()})

    def imports(self, module: str) -> tuple[bool, str]:
        res = self.session.exec([self.session.python, "-c", f"import importlib; importlib.import_module({module!r})"],
                                cwd=self.root, env={"PYTHONPATH": self.runner.pythonpath(self.root)},
                                timeout=min(self.timeout, 60))
        return res.exit_code == 0, res.tail(3)

    def check(self, cand: Candidate) -> Candidate:
        """Run the gates on `cand`, filling its gate results; marks it kept or dropped."""
        if not prepare_candidate(cand, self.baseline, self.stable):
            return cand
        originals = self._swap_in(cand.files_b)
        try:
            verdict = self._verdict(cand)
        finally:
            self._restore(originals)
        return verdict.apply(cand)

    def _verdict(self, cand: Candidate) -> GateVerdict:
        """The gates on B, swapped into the work copy: its covering tests, or its import when none."""
        module, tests = cand.function.module, cand.line_tests
        start = time.monotonic()
        if not tests:
            ok, tail = self.imports(module)
            duration = time.monotonic() - start
            return imports_fine(duration) if ok else import_broken(tail, duration, tests=tests)
        limit = min(self.timeout, self.timeouts.for_tests(self.baseline, tests) + _SUBPROCESS_STARTUP_SEC)
        run = self.runner.run(root=self.root, tests=tests, timeout=limit, extra_args=EXITFIRST_ARGS)
        passed = run.passed()
        failing = sorted(failing_tests(tests, {n: n in passed for n in run.results}))
        duration = time.monotonic() - start
        if run.timed_out:
            return timed_out(duration)
        if failing:
            ok, tail = self.imports(module)
            if not ok:
                return import_broken(tail, duration, tests=tests)
        return covering_ran(tests, failing, duration)

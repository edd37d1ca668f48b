"""Gates: cheap checks, in the sandbox, that a candidate is a real test gap.

All gate runs of a repo share one warm session and one work copy of A (`/…/r2e/gate`): each candidate's
B files are written over it, its covering tests run, and A's files are put back. Cheapest first:
the mutant compiles (host) → the covering tests run on B → if any fails, an import check tells
"breaks import" from "killed".
"""

from __future__ import annotations

import posixpath
import time

from repo2rlenv.baseline.runner import BaselineReport, SuiteRunner
from repo2rlenv.pipelines.test_synthesis.candidates import (
    BaselineCoverage,
    Candidate,
    GateResult,
    SkipReason,
)
from repo2rlenv.pipelines.test_synthesis.functions import FunctionRecord


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


def prepare_candidate(cand: Candidate, baseline: BaselineReport, stable: set[str]) -> bool:
    """The host-side gates every gate runner shares: baseline coverage of the function, its covering
    tests (whole function, and the changed line), and "B compiles". False when `cand` was dropped."""
    func = cand.function
    cand.baseline = baseline_coverage(baseline, func)
    covering = baseline.coverage.tests_covering
    cand.covering_tests = sorted(covering(func.path, function_lines(baseline, func)) & stable)
    cand.line_tests = sorted(covering(func.path, [cand.line]) & stable) if cand.line else list(cand.covering_tests)
    for rel, text in cand.files_b.items():
        try:
            compile(text, rel, "exec")
        except SyntaxError as exc:
            cand.drop(SkipReason.does_not_compile, str(exc))
            return False
    cand.gates.append(GateResult(gate="compiles", passed=True))
    return True


class GateRunner:
    """Runs the gates of many candidates in one session."""

    def __init__(self, runner: SuiteRunner, baseline: BaselineReport, *, timeout: float):
        self.runner = runner
        self.session = runner.session
        self.baseline = baseline
        self.timeout = timeout
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
        func = cand.function
        if not prepare_candidate(cand, self.baseline, self.stable):
            return cand
        originals = self._swap_in(cand.files_b)
        try:
            tests = cand.line_tests
            start = time.monotonic()
            if not tests:
                ok, tail = self.imports(func.module)
                cand.gates.append(GateResult(gate="imports", passed=ok, detail="" if ok else tail,
                                             duration_sec=time.monotonic() - start))
                if not ok:
                    cand.drop(SkipReason.breaks_import, tail)
                    return cand
                cand.killed = False
            else:
                run = self.runner.run(root=self.root, tests=tests, timeout=self.timeout)
                failing = sorted(n for n in tests if n not in run.passed())
                duration = time.monotonic() - start
                if run.timed_out:
                    cand.killed = True
                    cand.gates.append(GateResult(gate="covering tests on B", passed=False,
                                                 detail="timed out", duration_sec=duration))
                    cand.drop(SkipReason.timeout_on_b)
                    return cand
                if failing:
                    ok, tail = self.imports(func.module)
                    if not ok:
                        cand.drop(SkipReason.breaks_import, tail)
                        return cand
                cand.killed = bool(failing)
                cand.gates.append(GateResult(
                    gate="covering tests on B", passed=not failing, duration_sec=duration,
                    detail=f"{len(tests)} run, {len(failing)} noticed B" + (f": {failing[0]}" if failing else "")))
        finally:
            self._restore(originals)
        cand.status = "kept"
        return cand

"""Model-free reruns of a saved diff-mode run: `solve recheck` (its test files on the repository as it is
now) and `solve regression` (on two revisions: the tests must witness the change, failing before and
passing after).

Both run the report's own test files with the report's own pytest selection (-k/-m) and per-run
timeout, in a sandbox of the same kind `solve` uses, with no model call.
"""

from __future__ import annotations

import shutil
import subprocess
import tarfile
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Literal

from pydantic import BaseModel, ConfigDict, Field

from repo2rlenv.baseline.junit import Outcome
from repo2rlenv.baseline.runner import SuiteRun, SuiteRunner
from repo2rlenv.sandbox.base import Sandbox
from repo2rlenv.sandbox.install import detect_import_roots
from repo2rlenv.solver.errors import SolverInputError
from repo2rlenv.solver.report import CaseResult, DiffReport

# Never part of a snapshot: version control, caches and environments.
_IGNORED = shutil.ignore_patterns(".git", "__pycache__", "*.pyc", ".venv", "venv", "*.egg-info", ".tox", ".nox",
                                  ".pytest_cache", ".mypy_cache", "node_modules", "build", "dist")
TIMEOUT, COLLECTION_ERROR = "timeout", "collection_error"


def selection(report: DiffReport) -> list[str]:
    k, m = report.settings.get("pytest_k"), report.settings.get("pytest_m")
    return [*(["-k", k] if k else []), *(["-m", m] if m else [])]


def cases_of(run: SuiteRun) -> list[CaseResult]:
    """Each case's outcome; a timed-out run and each file pytest could not collect are cases of their own."""
    cases = [CaseResult(nodeid=n, outcome=r.outcome.value) for n, r in sorted(run.results.items())]
    cases += [CaseResult(nodeid=e.nodeid, outcome=COLLECTION_ERROR) for e in run.collection_errors]
    if run.timed_out:
        cases.append(CaseResult(nodeid="<run>", outcome=TIMEOUT))
    return cases


def run_files(tree: Path, files: dict[str, str], report: DiffReport, sandbox: Sandbox) -> list[CaseResult]:
    """The test `files` written into a copy of `tree` and run there (no coverage, the report's selection)."""
    with tempfile.TemporaryDirectory(prefix="r2e-rerun-") as tmp:
        snapshot = Path(tmp) / "repo"
        shutil.copytree(tree, snapshot, ignore=_IGNORED, symlinks=True)
        for rel, text in files.items():
            (snapshot / rel).parent.mkdir(parents=True, exist_ok=True)
            (snapshot / rel).write_text(text, encoding="utf-8")
        sandbox.prepare(snapshot)
        session = sandbox.open()
        try:
            runner = SuiteRunner(session, detect_import_roots(snapshot))
            run = runner.run(tests=sorted(files), with_coverage=False,
                             timeout=float(report.settings.get("test_timeout_sec", 120.0)), extra_args=selection(report))
        finally:
            session.close()
    return cases_of(run)


def recheck(report: DiffReport, repo: Path, sandbox: Sandbox) -> DiffReport:
    """The report with a fresh `recheck`: its test files rerun on `repo` as it is now."""
    from repo2rlenv.solver.report import Recheck

    if not report.files:
        raise SolverInputError("the report holds no test files to recheck (its patch is empty)")
    cases = run_files(repo, report.files, report, sandbox)
    ok = bool(cases) and all(c.outcome in (Outcome.passed.value, Outcome.skipped.value) for c in cases) \
        and any(c.outcome == Outcome.passed.value for c in cases)
    note = "" if ok else "some test no longer passes" if cases else "no test ran"
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    return report.model_copy(update={"recheck": Recheck(at=now, passed=ok, cases=cases, note=note)})


# --- regression ---------------------------------------------------------------------------------

Verdict = Literal["witnessed", "not_witnessed", "inconclusive"]


class RegressionCase(BaseModel):
    model_config = ConfigDict(extra="forbid")

    nodeid: str
    before: str
    after: str


class Regression(BaseModel):
    """regression.json: the report's tests on two revisions."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = 1
    before: str
    after: str
    verdict: Verdict
    witnesses: list[str] = Field(default_factory=list, description="Cases failing before and passing after.")
    inconclusive: list[str] = Field(default_factory=list, description="Cases that timed out or did not collect.")
    cases: list[RegressionCase] = Field(default_factory=list)


def checkout(repo: Path, ref: str, into: Path) -> Path:
    """The tree of `ref` (committed files only), extracted into `into`."""
    proc = subprocess.run(["git", "-C", str(repo), "archive", "--format=tar", ref], capture_output=True, check=False)
    if proc.returncode != 0:
        reason = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise SolverInputError(f"cannot check out {ref!r} of {repo}: {reason[0] if reason else 'git archive failed'}")
    into.mkdir(parents=True)
    tar_path = into.parent / f"{into.name}.tar"
    tar_path.write_bytes(proc.stdout)
    with tarfile.open(tar_path) as tar:
        tar.extractall(into, filter="data")
    tar_path.unlink()
    return into


def judge(before: list[CaseResult], after: list[CaseResult]) -> tuple[Verdict, list[RegressionCase], list[str], list[str]]:
    """A witness is one case, by node id on both sides, that failed (an assertion or an error in the test,
    not a timeout or a collection error) before and passed after."""
    b = {c.nodeid: c.outcome for c in before}
    a = {c.nodeid: c.outcome for c in after}
    cases = [RegressionCase(nodeid=n, before=b.get(n, "missing"), after=a.get(n, "missing")) for n in sorted(set(b) | set(a))]
    unclear = {TIMEOUT, COLLECTION_ERROR}
    witnesses = [c.nodeid for c in cases if c.before in ("failed", "error") and c.after == "passed"]
    inconclusive = [c.nodeid for c in cases if c.before in unclear or c.after in unclear]
    verdict: Verdict = "witnessed" if witnesses else "inconclusive" if inconclusive else "not_witnessed"
    return verdict, cases, witnesses, inconclusive


def regression(report: DiffReport, repo: Path, before: str, after: str,
               make_sandbox: Callable[[str], Sandbox]) -> Regression:
    if not report.files:
        raise SolverInputError("the report holds no test files (its patch is empty)")
    if not (repo / ".git").exists():
        raise SolverInputError(f"{repo} is not a git repository (regression checks out --before and --after)")
    with tempfile.TemporaryDirectory(prefix="r2e-regression-") as tmp:
        trees = {side: checkout(repo, ref, Path(tmp) / side) for side, ref in (("before", before), ("after", after))}
        results = {side: run_files(tree, report.files, report, make_sandbox(side)) for side, tree in trees.items()}
    verdict, cases, witnesses, inconclusive = judge(results["before"], results["after"])
    return Regression(before=before, after=after, verdict=verdict, witnesses=witnesses, inconclusive=inconclusive,
                      cases=cases)

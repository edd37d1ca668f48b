"""`repo2rlenv doctor`: what would `generate` do with this repo, and what stops it?

Runs generate's own first stages (`generate.resolve_job`, `ref_setup.open_ref`, `ref_setup.ref_baseline`,
the mutation miner) — never a copy of them — and reports what was detected (the install plan's
`describe()`), the baseline's figures, and one actionable line per problem from `PROBLEMS`. A problem is
blocking when generate cannot emit anything past it; doctor exits 0 when no problem is blocking.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from repo2rlenv.config import GenerateConfig
from repo2rlenv.errors import BaselineError, Repo2RLEnvError, UserError, classify
from repo2rlenv.failures import cause_of, tool_output, write_log
from repo2rlenv.progress import Reporter

# Problem kind → (stage, line template, blocking). Templates read the problem's `facts`.
PROBLEMS: dict[str, tuple[str, str, bool]] = {
    # The cause reads as a sentence of its own ("pip could not build the project's metadata: LookupError: …").
    "environment_failed": ("environment", "{cause}", True),
    "stage_failed": ("source", "{cause}", True),  # reported under the stage that failed
    "baseline_failed": ("baseline", "{cause}", True),
    "needs_network": ("baseline", "tests need network: {count} quarantined", False),
    "collection_errors": ("baseline", "{count} files fail to collect: {files}", False),
    "failing_at_ref": ("baseline", "{count} tests fail at the ref (quarantined, never gates), e.g. {first}", False),
    "flaky": ("baseline", "{count} flaky tests quarantined, e.g. {first}", False),
    "no_covered_function": ("mining", "no function is covered by the suite ({reason}: {count})", True),
    "no_candidates": ("mining", "no mutation candidate: {reason} ({count})", True),
}
# Reasons the miner gives when coverage saw none of the package (see mutation.mine_mutations).
_NOT_COVERED = ("function: module not imported by the suite",)
_STAGES = ["source", "environment", "baseline", "mining"]


class Problem(BaseModel):
    """One thing that stops or narrows generate, as a line a user can act on."""

    model_config = ConfigDict(extra="forbid")

    kind: str
    stage: str
    line: str
    blocking: bool
    log: str | None = None

    @classmethod
    def of(cls, kind: str, log: Path | None = None, stage: str | None = None, **facts: Any) -> "Problem":
        default_stage, template, blocking = PROBLEMS[kind]
        return cls(kind=kind, stage=stage or default_stage, line=template.format(**facts), blocking=blocking,
                   log=str(log) if log else None)

    def render(self) -> str:
        tail = f" (full output: {self.log})" if self.log else ""
        return f"{self.stage}: {self.line}{tail}"


class DoctorReport(BaseModel):
    """What doctor found; `--json` prints it."""

    model_config = ConfigDict(extra="forbid")

    repo: str
    commit: str | None = None
    sandbox: str = ""
    stage_reached: str = "source"
    backend: str | None = None
    detected: list[tuple[str, str]] = Field(default_factory=list)
    tests: int | None = None
    stable_passing: int | None = None
    quarantined: int | None = None
    functions: int | None = None
    candidates: int | None = None
    problems: list[Problem] = Field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any(p.blocking for p in self.problems)

    def to_json(self) -> dict[str, Any]:
        return {**self.model_dump(mode="json"), "ok": self.ok}


def describe_plan(plan: Any) -> list[tuple[str, str]]:
    """The install plan as (label, value) rows: its own `describe()` when it has one, else its fields."""
    if plan is None:
        return []
    describe = getattr(plan, "describe", None)
    if callable(describe):
        return [(str(k), str(v)) for k, v in describe()]
    fields = plan.model_dump() if hasattr(plan, "model_dump") else dict(vars(plan))
    rows: list[tuple[str, str]] = []
    for key, value in fields.items():
        if key == "pip_installs":
            rows += [("install", "pip install " + " ".join(args)) for args in value]
        else:
            rows.append((key.replace("_", " "), ", ".join(map(str, value)) if isinstance(value, list) else str(value)))
    return rows


def _backend(rows: list[tuple[str, str]], a_dir: Path | None) -> str | None:
    for label, value in rows:
        if label == "build backend":
            return value
    if a_dir is None:
        return None
    import tomllib

    pyproject = a_dir / "pyproject.toml"
    if pyproject.is_file():
        try:
            system = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("build-system", {})
        except (tomllib.TOMLDecodeError, UnicodeDecodeError):
            return None
        return system.get("build-backend") or "setuptools (legacy)"
    return "setuptools (setup.py)" if (a_dir / "setup.py").is_file() else None


def _suite_args(runner: Any) -> list[str]:
    """pytest's options and paths of a whole-suite run of `runner` (`SuiteRunner.suite_paths`)."""
    args = runner.pytest_args() if hasattr(runner, "pytest_args") else ["-p", "no:cacheprovider"]
    return [*args, *getattr(runner, "suite_paths", [])]


def _pytest_command(runner: Any) -> str:
    return " ".join(["python -m pytest", *_suite_args(runner)])


def run_doctor(config: GenerateConfig, reporter: Reporter, log_dir: Path) -> DoctorReport:
    """Detect, build, run the baseline and mine, collecting problems instead of stopping at the first."""
    from repo2rlenv.generate import resolve_job
    from repo2rlenv.pipelines.base import RunContext
    from repo2rlenv.pipelines.test_synthesis.ref_setup import open_ref, ref_baseline

    job = resolve_job(config, reporter)  # bad input stops here: exit 2, like generate
    report = DoctorReport(repo=job.source.display_name, commit=job.commit, sandbox=job.sandbox.name)
    work = Path(tempfile.mkdtemp(prefix="r2e-doctor-"))
    ctx = RunContext(config=config, source=job.source, commit=job.commit, sandbox=job.sandbox, out_dir=config.out,
                     work_dir=work, reporter=reporter)
    try:
        try:
            ref = open_ref(ctx)
        except UserError:
            raise
        except Repo2RLEnvError as exc:  # a defect is not a problem of the repo: the CLI reports it as one
            stage, _ = classify(exc, reporter.current_stage)
            report.detected = describe_plan(getattr(job.sandbox, "plan", None))
            report.backend = _backend(report.detected, work / "a")
            kind = "environment_failed" if stage == "environment" else "stage_failed"
            report.problems.append(Problem.of(kind, write_log(exc, stage, log_dir), stage=stage,
                                              cause=cause_of(str(exc), tool_output(exc))))
            return report
        report.stage_reached = "environment"
        report.detected = [*describe_plan(ref.plan), ("pytest command", _pytest_command(ref.runner))]
        report.backend = _backend(report.detected, ref.a_dir)
        try:
            _check_baseline_and_mining(ctx, job.options, ref, report, log_dir, ref_baseline)
        finally:
            ref.session.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return report


def _check_baseline_and_mining(ctx: Any, options: Any, ref: Any, report: DoctorReport, log_dir: Path,
                               ref_baseline: Any) -> None:
    try:
        baseline = ref_baseline(ctx, options, ref)
    except UserError:
        raise
    except Repo2RLEnvError as exc:
        stage, _ = classify(exc, "baseline")
        report.problems.append(Problem.of("baseline_failed", write_log(exc, stage, log_dir),
                                          cause=cause_of(str(exc), tool_output(exc))))
        if isinstance(exc, BaselineError) and "timed out" not in str(exc) and "did not finish" not in str(exc):
            report.problems += diagnose_failed_baseline(ref.runner, timeout=options.suite_timeout_sec)
        return
    report.stage_reached = "baseline"
    report.tests, report.stable_passing = baseline.total, len(baseline.stable_passing)
    report.quarantined = len(baseline.quarantined)
    report.problems += baseline_problems(baseline)
    from repo2rlenv.pipelines.test_synthesis.mine.mutation import mine_mutations
    from repo2rlenv.pipelines.test_synthesis.options import TestSynthesisOptions

    mining = TestSynthesisOptions.model_validate({**options.model_dump(), "strategy": "mutation"})
    ctx.reporter.stage("mining mutation candidates", "mining")
    candidates, skipped, functions = mine_mutations(ref.a_dir, baseline, mining, ref.plan.import_roots)
    report.functions, report.candidates = len(functions), len(candidates)
    if candidates:
        report.stage_reached = "mining"
        return
    uncovered = sum(skipped.get(r, 0) for r in _NOT_COVERED)
    if not functions and uncovered:
        report.problems.append(Problem.of("no_covered_function", reason=_NOT_COVERED[0], count=uncovered))
        return
    reason, count = max(skipped.items(), key=lambda kv: kv[1]) if skipped else ("no function found", 0)
    report.problems.append(Problem.of("no_candidates", reason=reason, count=count))


_COLLECTING = re.compile(r"ERROR collecting (\S+)")
_E_LINE = re.compile(r"^E\s+(.+)$")


def collection_errors(runner: Any, *, timeout: float) -> dict[str, str]:
    """File → pytest's own error line, from one `pytest --collect-only` in the session (the baseline's
    reports say only "collection failure")."""
    session = runner.session
    try:
        res = session.exec([session.python, "-m", "pytest", "--collect-only", "-q", *_suite_args(runner)],
                           cwd=session.workspace,
                           env={"PYTHONPATH": runner.pythonpath(session.workspace)}, timeout=timeout)
    except Repo2RLEnvError:
        return {}
    errors: dict[str, str] = {}
    current = None
    for line in f"{res.stdout}\n{res.stderr}".splitlines():
        header = _COLLECTING.search(line)
        if header:
            current = header[1]
            errors[current] = ""
        elif current and not errors[current] and _E_LINE.match(line):
            errors[current] = _E_LINE.match(line)[1].strip()
    return errors


def diagnose_failed_baseline(runner: Any, *, timeout: float) -> list[Problem]:
    """Why no test passed: files that fail to collect (pytest --collect-only) and tests that fail (one plain
    run) — the baseline's error says only how many were collected."""
    problems = []
    errors = collection_errors(runner, timeout=timeout)
    if errors:
        first, why = sorted(errors.items())[0]
        files = ", ".join(sorted(errors)[:3]) + (" …" if len(errors) > 3 else "")
        problems.append(Problem.of("collection_errors", count=len(errors),
                                   files=f"{files} (first: {why})" if why else files))
    try:
        run = runner.run(timeout=timeout)
    except Repo2RLEnvError:
        return problems
    failing = {n: r.message for n, r in run.results.items() if r.outcome.value in ("failed", "error") and "::" in n}
    if failing:
        first, message = sorted(failing.items())[0]
        problems.append(Problem.of("failing_at_ref", count=len(failing),
                                   first=f"{first}: {message}" if message else first))
    return problems


def baseline_problems(baseline: Any) -> list[Problem]:
    """What narrows the baseline without stopping it: tests without network, collection errors, failing and
    flaky tests (each quarantined, so never a gate)."""
    problems: list[Problem] = []
    offline = list(getattr(baseline, "needs_network", []) or [])
    if offline:
        problems.append(Problem.of("needs_network", count=len(offline)))
    collect = dict(getattr(baseline, "collection_errors", {}) or {})
    if collect:
        files = ", ".join(sorted(collect)[:3]) + (" …" if len(collect) > 3 else "")
        problems.append(Problem.of("collection_errors", count=len(collect), files=files))
    failing = sorted(n for n, why in baseline.quarantined.items() if why.startswith("fails at the ref")
                     and n not in offline)
    if failing:
        problems.append(Problem.of("failing_at_ref", count=len(failing), first=failing[0]))
    flaky = sorted(n for n, why in baseline.quarantined.items() if why.startswith("flaky"))
    if flaky:
        problems.append(Problem.of("flaky", count=len(flaky), first=flaky[0]))
    return problems


def print_report(report: DoctorReport, reporter: Reporter) -> None:
    """The detection table, the baseline's figures, then one line per problem (or that all is well)."""
    reporter.table("detected", ["what", "value (where it came from)"], [list(r) for r in report.detected])
    if report.tests is not None:
        reporter.info(f"baseline: {report.tests} tests, {report.stable_passing} stable passing, "
                      f"{report.quarantined} quarantined")
    if report.candidates is not None:
        reporter.info(f"mining: {report.functions} covered functions, {report.candidates} mutation candidates")
    for problem in report.problems:
        (reporter.warn if not problem.blocking else reporter.error)(problem.render())
    if report.ok:
        reporter.info(f"ok: generate can proceed (reached {report.stage_reached})")

"""The first stages of a run at the ref, shared by `generate` and `doctor`: snapshot (source), the sandbox
environment (environment), and the existing suite with per-test coverage (baseline).

Each stage is announced through the reporter under its name, so a failure inside it is reported as that
stage (`repo2rlenv.errors.classify`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from repo2rlenv.baseline.runner import BaselineReport, SuiteRunner, run_baseline
from repo2rlenv.pipelines.base import RunContext
from repo2rlenv.sandbox.base import Session
from repo2rlenv.sources import snapshot


@dataclass(slots=True)
class RefSetup:
    """The ref's snapshot, its install plan and an open session in its environment (close `session`)."""

    a_dir: Path
    plan: Any
    session: Session
    runner: SuiteRunner


def open_ref(ctx: RunContext) -> RefSetup:
    """Snapshot the ref, build its environment and open a session in it."""
    rep = ctx.reporter
    with rep.in_stage("source"):
        a_dir = snapshot(ctx.source, ctx.commit, ctx.work_dir / "a")
    rep.stage(f"preparing the {ctx.sandbox.name} sandbox", "environment")
    ctx.sandbox.prepare(a_dir)
    plan = ctx.sandbox.plan  # type: ignore[attr-defined]
    session = ctx.sandbox.open()
    try:
        runner = SuiteRunner(session, plan.import_roots)
    except BaseException:
        session.close()
        raise
    return RefSetup(a_dir=a_dir, plan=plan, session=session, runner=runner)


def ref_baseline(ctx: RunContext, options: Any, runner: SuiteRunner) -> BaselineReport:
    """The existing suite on A: stable tests, quarantine, per-test coverage."""
    ctx.reporter.stage("baseline: the existing suite on A", "baseline")
    return run_baseline(runner, reruns=options.baseline_reruns, timeout=options.suite_timeout_sec,
                        progress=ctx.reporter.info)

"""The first stages of a run at the ref, shared by `generate` and `doctor`: snapshot (source), the sandbox
environment (environment), and the existing suite with per-test coverage (baseline).

Each stage is announced through the reporter under its name, so a failure inside it is reported as that
stage (`repo2rlenv.errors.classify`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repo2rlenv.baseline.cache import baseline_key, load_baseline, store_baseline
from repo2rlenv.baseline.runner import BaselineReport, SuiteRunner, run_baseline
from repo2rlenv.digest import tree_digest
from repo2rlenv.pipelines.base import RunContext
from repo2rlenv.discovery.requirements import Dropped
from repo2rlenv.sandbox.base import Session
from repo2rlenv.sandbox.optional_drops import optional_drops
from repo2rlenv.sources import default_cache_dir, snapshot


@dataclass(slots=True)
class RefSetup:
    """The ref's snapshot, its install plan and an open session in its environment (close `session`)."""

    a_dir: Path
    a_digest: str  # the snapshot's tree digest (journal and baseline cache keys)
    plan: Any
    session: Session
    runner: SuiteRunner
    dropped: list[Dropped] = field(default_factory=list)  # optional dependencies the environment could not install, with pip's reason


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
        dropped = optional_drops(session, plan) if hasattr(plan, "optional_requirements") else []
    except BaseException:
        session.close()
        raise
    for dep in dropped:
        rep.warn(f"environment: dropped {dep.spec} ({dep.source}): {dep.reason}")
    return RefSetup(a_dir=a_dir, a_digest=tree_digest(a_dir), plan=plan, session=session, runner=runner,
                    dropped=dropped)


def ref_baseline(ctx: RunContext, options: Any, ref: RefSetup) -> BaselineReport:
    """The existing suite on A: stable tests, quarantine, per-test coverage. A baseline computed before
    from the same inputs (by `doctor`, or by a run that was killed later) is reused (`baseline.cache`)."""
    ctx.reporter.stage("baseline: the existing suite on A", "baseline")
    root = ctx.config.cache_dir or default_cache_dir()
    key = None
    if options.baseline_cache:
        key = baseline_key(tree_digest=ref.a_digest, sandbox_id=_sandbox_id(ctx.sandbox),
                           runner=ref.runner, reruns=options.baseline_reruns, timeout=options.suite_timeout_sec)
        kept = load_baseline(root, key)
        if kept is not None:
            ctx.reporter.info(f"reusing the baseline of an earlier run on this tree ({kept.total} tests; "
                              "--pipeline-opt baseline_cache=false runs it again)")
            ref.runner.set_aside = sorted(kept.set_aside)  # later runs leave out what that baseline did
            return kept
    report = run_baseline(ref.runner, reruns=options.baseline_reruns, timeout=options.suite_timeout_sec,
                          progress=ctx.reporter.info)
    if key is not None:
        store_baseline(root, key, report)
    return report


def _sandbox_id(sandbox: Any) -> str:
    """What the environment's contents and limits depend on: a Docker sandbox's image tag is a hash of the
    tree, the base image and the Dockerfile; its limits decide what runs out of memory or processes."""
    return f"{sandbox.name}|{getattr(sandbox, 'image', None)}|{getattr(sandbox, 'limits', None)!r}"

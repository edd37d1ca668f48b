"""`repo2rlenv generate`: resolve the source and sandbox, run the pipeline, report.

Everything the user can get wrong is checked before anything is written under `--out`; a run that fails
later leaves no half-written output behind in an `--out` it created (only the failure's log, under logs/).
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from repo2rlenv import atomic
from repo2rlenv.config import GenerateConfig, validate_options
from repo2rlenv.discovery.version import describe_tag
from repo2rlenv.errors import ConfigError
from repo2rlenv.pipelines.base import PipelineResult, RunContext
from repo2rlenv.pipelines.registry import get_pipeline
from repo2rlenv.progress import Reporter
from repo2rlenv.sandbox.base import Limits, Sandbox
from repo2rlenv.sandbox.select import choose_sandbox
from repo2rlenv.sources import RepoSource, default_cache_dir, resolve_commit, resolve_source

LOGS_DIR = "logs"


@dataclass(slots=True)
class Resolved:
    """A job's checked inputs: the pipeline and its options, the source at its commit, the sandbox."""

    pipeline: Any
    options: Any
    source: RepoSource
    commit: str | None
    sandbox: Sandbox
    model_checks: list[Any]


def resolve_job(config: GenerateConfig, reporter: Reporter) -> Resolved:
    """Check the options, open the source and choose the sandbox (shared by `generate` and `doctor`)."""
    pipeline = get_pipeline(config.pipeline)
    options = validate_options(pipeline.options_model, config.pipeline_opts)
    model_checks = check_model(config, pipeline, options, reporter)
    if config.out.exists() and not config.out.is_dir():
        raise ConfigError(f"--out must be a directory: {config.out}")
    if config.ca_bundle is not None and not config.ca_bundle.is_file():
        raise ConfigError(f"--ca-bundle file not found: {config.ca_bundle}")
    cache_dir = config.cache_dir or default_cache_dir()
    reporter.stage(f"opening {config.repo}", "source")
    source = resolve_source(config.repo, cache_dir=cache_dir)
    commit = resolve_commit(source, config.ref)
    limits = Limits(
        timeout_sec=getattr(options, "suite_timeout_sec", 900),
        memory_mb=getattr(options, "memory_mb", 4096),
        cpus=getattr(options, "cpus", 1.0),
        pids=getattr(options, "pids", 512),
    )
    # The ref's latest tag is the version VCS build backends are told on the snapshot (discovery/version.py).
    version_hint = describe_tag(source.path, commit) if source.has_git and commit else None
    with reporter.in_stage("sandbox"):
        sandbox = choose_sandbox(config.sandbox, base_image=config.base_image, limits=limits, cache_dir=cache_dir,
                                 tag_name=source.slug, ca_bundle=config.ca_bundle, warn=reporter.warn,
                                 version_hint=version_hint)
    return Resolved(pipeline=pipeline, options=options, source=source, commit=commit, sandbox=sandbox,
                    model_checks=model_checks)


def check_model(config: GenerateConfig, pipeline: Any, options: Any, reporter: Reporter) -> list[Any]:
    """Before the source is opened or a container started: the model the run will use can be called
    (`llm/preflight.py`), it has a price when a ceiling is set, and a pipeline that needs one gets one.
    Returns the check's ledger entries (none when no model will be used)."""
    needed = pipeline.model_needed(options) if hasattr(pipeline, "model_needed") else None
    if needed is True and not config.llm:
        raise ConfigError("this pipeline's options need a model: pass --llm provider/model")
    if not config.llm or needed is False:
        return []
    from repo2rlenv.llm.errors import LLMConfigError
    from repo2rlenv.llm.preflight import ModelSetting, preflight
    from repo2rlenv.llm.prices import Prices, env_var

    prices = Prices.load([config.llm], config={m: p.model_dump() for m, p in config.prices.items()})
    if config.max_spend_usd is not None and prices.for_model(config.llm) is None:
        raise LLMConfigError(f"--max-spend-usd needs a price for {config.llm}: set {env_var(config.llm)}="
                             f"'<input>,<output>' (USD per million tokens) or [prices.\"{config.llm}\"] input_per_mtok/output_per_mtok in the config file")
    with reporter.in_stage("model"):
        reporter.stage(f"checking {config.llm}{' at ' + config.llm_base_url if config.llm_base_url else ''}", "model")
        return preflight([ModelSetting(config.llm, config.llm_base_url, config.api_key_env)], prices=prices,
                         warn=reporter.warn)


def run_generate(config: GenerateConfig, reporter: Reporter) -> PipelineResult:
    """Run one generate job end to end and return its result."""
    created_out = not config.out.exists()
    job = resolve_job(config, reporter)
    work = Path(tempfile.mkdtemp(prefix="r2e-work-"))
    try:
        ctx = RunContext(config=config, source=job.source, commit=job.commit, sandbox=job.sandbox,
                         out_dir=config.out, work_dir=work, reporter=reporter, model_checks=job.model_checks)
        return job.pipeline.run(ctx, job.options)
    except BaseException:
        remove_partial_output(config.out, created=created_out)
        raise
    finally:
        shutil.rmtree(work, ignore_errors=True)


def remove_partial_output(out: Path, *, created: bool) -> None:
    """After a failed or interrupted run: remove what is half-written (task staging dirs), and when this run
    created --out and published no task, everything it wrote except the failure log under logs/.

    Published tasks are complete (atomic renames) and the journal is what a rerun resumes from, so an
    --out holding tasks, or one that existed before, keeps them."""
    if not out.is_dir():
        return
    atomic.sweep_staging(out)
    tasks = out / "tasks"
    if not created or (tasks.is_dir() and any(p.is_dir() for p in tasks.iterdir())):
        return
    for child in out.iterdir():
        if child.name == LOGS_DIR:
            continue
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)
    if not any(out.iterdir()):
        out.rmdir()

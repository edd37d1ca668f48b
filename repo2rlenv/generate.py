"""`repo2rlenv generate`: resolve the source and sandbox, run the pipeline, report.

Everything the user can get wrong is checked before anything is written under `--out`.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from repo2rlenv.config import GenerateConfig, validate_options
from repo2rlenv.discovery.version import describe_tag
from repo2rlenv.errors import ConfigError
from repo2rlenv.pipelines.base import PipelineResult, RunContext
from repo2rlenv.pipelines.registry import get_pipeline
from repo2rlenv.progress import Reporter
from repo2rlenv.sandbox.base import Limits
from repo2rlenv.sandbox.select import choose_sandbox
from repo2rlenv.sources import default_cache_dir, resolve_commit, resolve_source


def run_generate(config: GenerateConfig, reporter: Reporter) -> PipelineResult:
    """Run one generate job end to end and return its result."""
    pipeline = get_pipeline(config.pipeline)
    options = validate_options(pipeline.options_model, config.pipeline_opts)
    if config.out.exists() and not config.out.is_dir():
        raise ConfigError(f"--out must be a directory: {config.out}")
    if config.ca_bundle is not None and not config.ca_bundle.is_file():
        raise ConfigError(f"--ca-bundle file not found: {config.ca_bundle}")
    cache_dir = config.cache_dir or default_cache_dir()
    reporter.stage(f"opening {config.repo}")
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
    sandbox = choose_sandbox(config.sandbox, base_image=config.base_image, limits=limits, cache_dir=cache_dir,
                             tag_name=source.slug, ca_bundle=config.ca_bundle, warn=reporter.warn,
                             version_hint=version_hint)
    work = Path(tempfile.mkdtemp(prefix="r2e-work-"))
    try:
        ctx = RunContext(config=config, source=source, commit=commit, sandbox=sandbox, out_dir=config.out,
                         work_dir=work, reporter=reporter)
        return pipeline.run(ctx, options)
    finally:
        shutil.rmtree(work, ignore_errors=True)

"""The command line. A thin layer: parse flags, call library code, turn errors into exit codes.

Exit codes: 0 = at least one task emitted / command succeeded, 1 = a stage failed on the repository or
the run produced nothing (or a validation failed), 2 = usage, config or input error. Either failure is
one line on stderr, `error: STAGE: cause`; a stage failure adds `(full output: LOG)`, the raw pip/pytest
output under --out/logs/. The table is `repo2rlenv.errors.FAILURES`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import click

from repo2rlenv import __version__
from repo2rlenv.cli.guard import Failing as _Failing
from repo2rlenv.cli.guard import fail as _fail
from repo2rlenv.cli.guard import guard as _guard
from repo2rlenv.errors import Repo2RLEnvError

EXAMPLE_REPO = Path(__file__).resolve().parents[2] / "examples" / "minicart"


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="repo2rlenv")
def main() -> None:
    """Turn Python repositories into RL tasks: write the tests that catch a hidden behaviour change."""


def _generate_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    opts = [
        click.option("--pipeline", default=None, help="Pipeline to run (default: test_synthesis)."),
        click.option("--repo", "repos", multiple=True,
                     help="Local path, git URL, or GitHub owner/name. Repeat it for a corpus run."),
        click.option("--repos", "repos_file", type=click.Path(path_type=Path), default=None,
                     help="File of repos, one per line: SPEC [ref=REF] [KEY=VALUE ...] (a corpus run)."),
        click.option("--executor", type=click.Choice(["local", "ray"]), default=None,
                     help="Where a corpus's repos run (default: local, one at a time)."),
        click.option("--address", default=None, help="Ray cluster to join (--executor ray); default: start one here."),
        click.option("--workers", type=int, default=None,
                     help="Repos at once on a Ray cluster this run starts (default: 1 per 2 cores)."),
        click.option("--max-tasks", type=int, default=None, help="Most tasks of a corpus run, over all repos."),
        click.option("--retry-failed", is_flag=True, default=False,
                     help="On a rerun of a corpus, run the repos that failed again."),
        click.option("--ref", default=None, help="Branch, tag or commit (default: HEAD)."),
        click.option("--pipeline-opt", "pipeline_opt", multiple=True, metavar="KEY=VALUE",
                     help="Pipeline option; true/false → bool, JSON literal → value, else string. Repeatable."),
        click.option("--llm", default=None, help="litellm model id (provider/model); omit to use no model."),
        click.option("--llm-base-url", default=None, help="OpenAI-compatible base URL for --llm."),
        click.option("--api-key-env", default=None, help="Environment variable with the API key (default: the provider's)."),
        click.option("--max-spend-usd", type=float, default=None, help="Stop model calls past this spend."),
        click.option("--out", type=click.Path(path_type=Path), default=None, help="Dataset directory (default: r2e-out)."),
        click.option("--sandbox", type=click.Choice(["auto", "docker", "local"]), default=None,
                     help="Where repo code runs (default: auto = Docker when a daemon answers)."),
        click.option("--base-image", default=None, help="Base image for sandboxes and tasks."),
        click.option("--ca-bundle", type=click.Path(path_type=Path), default=None,
                     help="PEM bundle to trust inside image builds (TLS-intercepting proxies)."),
        click.option("--config", "config_file", type=click.Path(path_type=Path), default=None,
                     help="TOML or YAML file with these settings; flags override it."),
        click.option("--no-validate", "no_validate", is_flag=True, default=None,
                     help="Skip running each emitted task as Harbor would (oracle 1.0, empty 0.0)."),
        click.option("--harbor-verifier", type=click.Choice(["separate", "shared"]), default=None,
                     help="separate (default): grade in a fresh container (Harbor >= 0.13); shared: older form."),
        click.option("--json", "as_json", is_flag=True, help="Print a machine-readable summary on stdout."),
        click.option("-v", "--verbose", is_flag=True, help="Also list every baseline test's outcome and stage timings."),
    ]
    for opt in reversed(opts):
        fn = opt(fn)
    return fn


_CORPUS_FLAGS = ("executor", "address", "workers", "max_tasks", "retry_failed")


def _pipeline_opts(flags: dict[str, Any]) -> dict[str, Any]:
    """The pipeline options of the flags (taken out of `flags`): --pipeline-opt pairs, and the
    convenience flags that are pipeline options under another name (an explicit --pipeline-opt wins)."""
    from repo2rlenv.config import parse_pipeline_opts

    opts = parse_pipeline_opts(flags.pop("pipeline_opt", ()) or ())
    if flags.pop("no_validate", None):
        opts.setdefault("validate_tasks", False)
    verifier_mode = flags.pop("harbor_verifier", None)
    if verifier_mode:
        opts.setdefault("harbor_verifier", verifier_mode)
    return opts


def _run_generate(flags: dict[str, Any], config_file: Path | None, as_json: bool, verbose: bool = False,
                  state: _Failing | None = None) -> int:
    from repo2rlenv.config import build_config, load_config_file
    from repo2rlenv.generate import run_generate
    from repo2rlenv.progress import Reporter

    repos = list(flags.pop("repos", ()) or ())
    repos_file = flags.pop("repos_file", None)
    corpus = {k: flags.pop(k, None) for k in _CORPUS_FLAGS}
    if repos_file is not None or len(repos) > 1:
        return _run_corpus(flags, repos, repos_file, corpus, config_file, as_json, state)
    if any(v for v in corpus.values()):
        from repo2rlenv.errors import ConfigError

        given = next(k for k, v in corpus.items() if v)
        raise ConfigError(f"--{given.replace('_', '-')} is for corpus runs: pass --repos FILE or --repo more than once")
    if repos:
        flags["repo"] = repos[0]
    file_values = load_config_file(config_file) if config_file else {}
    flags["pipeline_opts"] = _pipeline_opts(flags)
    config = build_config(file_values, flags)
    reporter = Reporter(quiet=as_json, verbose=verbose)
    if state is not None:
        from repo2rlenv.generate import LOGS_DIR

        state.reporter, state.log_dir = reporter, config.out / LOGS_DIR
    result = run_generate(config, reporter)
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=2, sort_keys=True))
    return 0 if result.emitted else 1


def _run_corpus(flags: dict[str, Any], repos: list[str], repos_file: Path | None, corpus: dict[str, Any],
                config_file: Path | None, as_json: bool, state: _Failing | None) -> int:
    from repo2rlenv.config import build_config, load_config_file
    from repo2rlenv.corpus.driver import plan_corpus, run_corpus
    from repo2rlenv.corpus.entries import corpus_entries
    from repo2rlenv.config import validate_options
    from repo2rlenv.corpus.executors import executor_factory
    from repo2rlenv.errors import ConfigError
    from repo2rlenv.generate import check_model
    from repo2rlenv.pipelines.registry import get_pipeline
    from repo2rlenv.progress import Reporter

    if flags.get("ref"):
        raise ConfigError("--ref is for one repo: give each repo its ref in the --repos file (SPEC ref=REF)")
    entries = corpus_entries(repos, repos_file)
    file_values = load_config_file(config_file) if config_file else {}
    flags["pipeline_opts"] = _pipeline_opts(flags)
    flags["repo"] = entries[0].spec
    base = build_config(file_values, flags)
    plan = plan_corpus(base, entries, max_tasks=corpus["max_tasks"], retry_failed=bool(corpus["retry_failed"]))
    make_executor = executor_factory(corpus["executor"] or "local", address=corpus["address"],
                                     workers=corpus["workers"])
    reporter = Reporter(quiet=as_json)
    if state is not None:
        state.reporter = reporter
    # The model is checked once for the corpus, before any repo starts (each repo's run checks it again).
    pipeline = get_pipeline(base.pipeline)
    first = plan.configs[entries[0].name]
    check_model(base, pipeline, validate_options(pipeline.options_model, first.pipeline_opts), reporter)
    summary = run_corpus(plan, make_executor, reporter)
    if as_json:
        click.echo(json.dumps(summary.to_json(), indent=2, sort_keys=True))
    return 0 if summary.totals.emitted else 1


@main.command()
@_generate_options
def generate(config_file: Path | None, as_json: bool, verbose: bool, **flags: Any) -> None:
    """Mine broken/fixed pairs of a repo (or of many: --repos FILE) and write Harbor tasks."""
    state = _Failing()
    _guard(lambda: _run_generate(flags, config_file, as_json, verbose, state), state)


@main.command()
@click.option("--repo", default=None, help="Local path, git URL, or GitHub owner/name.")
@click.option("--ref", default=None, help="Branch, tag or commit (default: HEAD).")
@click.option("--sandbox", type=click.Choice(["auto", "docker", "local"]), default=None,
              help="Where repo code runs (default: auto = Docker when a daemon answers).")
@click.option("--base-image", default=None, help="Base image for the sandbox.")
@click.option("--ca-bundle", type=click.Path(path_type=Path), default=None,
              help="PEM bundle to trust inside image builds (TLS-intercepting proxies).")
@click.option("--pipeline-opt", "pipeline_opt", multiple=True, metavar="KEY=VALUE",
              help="Pipeline option, as for generate (e.g. suite_timeout_sec=600). Repeatable.")
@click.option("--out", type=click.Path(path_type=Path), default=Path("r2e-doctor"), show_default=True,
              help="Where logs of failed stages go (under logs/).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON on stdout.")
def doctor(as_json: bool, **flags: Any) -> None:
    """Check a repo before generating: what was detected, does the environment build, does the baseline
    pass, is any function covered. Ends with one line per problem; exit 0 when generate can proceed."""
    state = _Failing()

    def body() -> int:
        from repo2rlenv.config import build_config, parse_pipeline_opts
        from repo2rlenv.doctor import print_report, run_doctor
        from repo2rlenv.generate import LOGS_DIR
        from repo2rlenv.progress import Reporter

        flags["pipeline_opts"] = parse_pipeline_opts(flags.pop("pipeline_opt", ()) or ())
        config = build_config({}, flags)
        reporter = Reporter(quiet=as_json)
        state.reporter, state.log_dir = reporter, config.out / LOGS_DIR
        report = run_doctor(config, reporter, state.log_dir)
        if as_json:
            click.echo(json.dumps(report.to_json(), indent=2, sort_keys=True))
        else:
            print_report(report, reporter)
        return 0 if report.ok else 1

    _guard(body, state)


@main.command()
@click.option("--out", type=click.Path(path_type=Path), default=Path("r2e-demo"), show_default=True,
              help="Dataset directory.")
@click.option("--sandbox", type=click.Choice(["auto", "docker", "local"]), default="auto", show_default=True)
@click.option("--limit", type=int, default=3, show_default=True, help="Tasks to emit.")
@click.option("--json", "as_json", is_flag=True, help="Print a machine-readable summary on stdout.")
def demo(out: Path, sandbox: str, limit: int, as_json: bool) -> None:
    """Generate tasks from the bundled example repo (examples/minicart) with the mutation strategy."""
    if not EXAMPLE_REPO.is_dir():
        _fail(Repo2RLEnvError("the bundled example is missing: run `demo` from a checkout of repo2rlenv"))
    flags: dict[str, Any] = {
        "repo": str(EXAMPLE_REPO), "out": out, "sandbox": sandbox,
        "pipeline_opt": ("strategy=mutation", f"limit={limit}"),
    }
    state = _Failing()
    _guard(lambda: _run_generate(flags, None, as_json, state=state), state)


@main.command()
@click.argument("dataset", type=click.Path(path_type=Path))
@click.option("--mode", type=click.Choice(["docker", "local"]), default="docker", show_default=True,
              help="docker: as Harbor runs tasks; local: verifier on the host (process-level isolation).")
@click.option("--all", "revalidate_all", is_flag=True, help="Also re-run tasks that passed before unchanged.")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON on stdout.")
def validate(dataset: Path, mode: str, revalidate_all: bool, as_json: bool) -> None:
    """Run every task of DATASET as Harbor would: oracle must score 1.0, an empty submission 0.0."""
    state = _Failing()

    def body() -> int:
        from repo2rlenv.errors import UserError
        from repo2rlenv.progress import Reporter
        from repo2rlenv.dataset.taskdir import DatasetPaths
        from repo2rlenv.validate import validate_dataset

        paths = DatasetPaths(dataset)
        if not paths.tasks.is_dir() or not paths.task_ids():
            raise UserError(f"not a repo2rlenv dataset (no tasks/ with tasks): {dataset}")
        if mode == "docker":
            from repo2rlenv.sandbox.docker import docker_client

            docker_client()
        reporter = Reporter(quiet=as_json)
        reporter.current_stage = "validate"  # a sandbox failure here is validation's, not an image build's
        state.reporter = reporter
        results = validate_dataset(dataset, mode=mode, only_changed=not revalidate_all, progress=reporter.info)
        rows = [[r.task_id, r.oracle.reward, r.empty.reward, r.existing.reward if r.existing else "-",
                 "ok" if r.ok else "FAIL"] for r in results]
        reporter.table("validation", ["task", "oracle", "empty", "existing tests", "result"], rows)
        if as_json:
            click.echo(json.dumps([r.model_dump(mode="json") for r in results], indent=2))
        return 0 if all(r.ok for r in results) else 1

    _guard(body, state)


@main.command()
@click.argument("dataset", type=click.Path(path_type=Path))
@click.option("--images/--no-images", default=True, show_default=True,
              help="Build each task's image and look inside it (Docker); --no-images checks the files only.")
@click.option("--json", "as_json", is_flag=True, help="Print audit.json on stdout.")
def audit(dataset: Path, images: bool, as_json: bool) -> None:
    """Check DATASET's tasks hide B and the oracle; find duplicates; write audit.json and browser.html."""
    state = _Failing()

    def body() -> int:
        from repo2rlenv.audit.run import audit_dataset
        from repo2rlenv.dataset.taskdir import DatasetPaths
        from repo2rlenv.errors import UserError
        from repo2rlenv.progress import Reporter

        if not DatasetPaths(dataset).task_ids():
            raise UserError(f"not a repo2rlenv dataset (no tasks/ with tasks): {dataset}")
        reporter = Reporter(quiet=as_json)
        reporter.current_stage = "audit"
        state.reporter = reporter
        report = audit_dataset(dataset, images=images, reporter=reporter)
        rows = [[t.task_id, t.kind, t.difficulty, t.validation,
                 "; ".join(f"{c.name}: {f}" for c in t.problems for f in c.found)[:120] or "ok"]
                for t in report.tasks]
        reporter.table("audit", ["task", "kind", "difficulty", "validation", "problems"], rows)
        for merge in report.duplicates:
            reporter.info(f"duplicate: {merge.task_id} of {merge.kept} ({merge.rule})")
        reporter.info(f"{len(report.tasks)} tasks, {report.problem_count} problems, {len(report.duplicates)} "
                      f"duplicates; wrote {dataset / 'audit.json'} and {dataset / 'browser.html'}")
        if as_json:
            click.echo(report.model_dump_json(indent=1))
        return 1 if report.problem_count or report.duplicates else 0

    _guard(body, state)


def _register_commands() -> None:
    # One module per command group; importing them loads no heavy library.
    from repo2rlenv.cli.hub import COMMANDS as HUB_COMMANDS
    from repo2rlenv.cli.serve import COMMANDS as SERVE_COMMANDS
    from repo2rlenv.cli.solver import COMMANDS as SOLVER_COMMANDS
    from repo2rlenv.cli.upgrade import COMMANDS as UPGRADE_COMMANDS

    for command in [*HUB_COMMANDS, *SERVE_COMMANDS, *SOLVER_COMMANDS, *UPGRADE_COMMANDS]:
        main.add_command(command)


_register_commands()


if __name__ == "__main__":  # pragma: no cover
    main()

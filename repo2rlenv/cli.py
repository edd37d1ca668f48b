"""The command line. A thin layer: parse flags, call library code, turn errors into exit codes.

Exit codes: 0 = at least one task emitted / command succeeded, 1 = ran but produced nothing (or a
validation failed), 2 = usage, config or input error (one clear line on stderr).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Callable

import click

from repo2rlenv import __version__
from repo2rlenv.errors import Repo2RLEnvError

EXAMPLE_REPO = Path(__file__).resolve().parent.parent / "examples" / "minicart"


def _fail(exc: Repo2RLEnvError) -> None:
    click.echo(f"error: {exc}", err=True)
    sys.exit(exc.exit_code)


def _guard(fn: Callable[[], int]) -> None:
    """Run a command body; known errors become one line and their exit code."""
    try:
        code = fn()
    except Repo2RLEnvError as exc:
        _fail(exc)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(130)
    sys.exit(code)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="repo2rlenv")
def main() -> None:
    """Turn Python repositories into RL tasks: write the tests that catch a hidden behaviour change."""


def _generate_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    opts = [
        click.option("--pipeline", default=None, help="Pipeline to run (default: test_synthesis)."),
        click.option("--repo", default=None, help="Local path, git URL, or GitHub owner/name."),
        click.option("--ref", default=None, help="Branch, tag or commit (default: HEAD)."),
        click.option("--pipeline-opt", "pipeline_opt", multiple=True, metavar="KEY=VALUE",
                     help="Pipeline option; true/false → bool, JSON literal → value, else string. Repeatable."),
        click.option("--llm", default=None, help="litellm model id (provider/model); omit to use no model."),
        click.option("--llm-base-url", default=None, help="OpenAI-compatible base URL for --llm."),
        click.option("--max-spend-usd", type=float, default=None, help="Stop model calls past this spend."),
        click.option("--out", type=click.Path(path_type=Path), default=None, help="Dataset directory (default: r2e-out)."),
        click.option("--sandbox", type=click.Choice(["auto", "docker", "local"]), default=None,
                     help="Where repo code runs (default: auto = Docker when a daemon answers)."),
        click.option("--base-image", default=None, help="Base image for sandboxes and tasks."),
        click.option("--ca-bundle", type=click.Path(path_type=Path), default=None,
                     help="PEM bundle to trust inside image builds (TLS-intercepting proxies)."),
        click.option("--config", "config_file", type=click.Path(path_type=Path), default=None,
                     help="TOML or YAML file with these settings; flags override it."),
        click.option("--json", "as_json", is_flag=True, help="Print a machine-readable summary on stdout."),
    ]
    for opt in reversed(opts):
        fn = opt(fn)
    return fn


def _run_generate(flags: dict[str, Any], config_file: Path | None, as_json: bool) -> int:
    from repo2rlenv.config import build_config, load_config_file, parse_pipeline_opts
    from repo2rlenv.generate import run_generate
    from repo2rlenv.progress import Reporter

    file_values = load_config_file(config_file) if config_file else {}
    flags["pipeline_opts"] = parse_pipeline_opts(flags.pop("pipeline_opt", ()) or ())
    config = build_config(file_values, flags)
    reporter = Reporter(quiet=as_json)
    result = run_generate(config, reporter)
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=2, sort_keys=True))
    return 0 if result.emitted else 1


@main.command()
@_generate_options
def generate(config_file: Path | None, as_json: bool, **flags: Any) -> None:
    """Mine broken/fixed pairs of a repo and write Harbor tasks."""
    _guard(lambda: _run_generate(flags, config_file, as_json))


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
    _guard(lambda: _run_generate(flags, None, as_json))


if __name__ == "__main__":  # pragma: no cover
    main()

"""The `push`, `pull` and `export` commands; `repo2rlenv/cli/main.py` registers them with `main.add_command`.

Thin, like the rest of the CLI: parse flags, call push.py / pull.py / export.py, print a short summary
on stderr (or JSON on stdout with --json). Errors go through `repo2rlenv.cli.guard.guard`: one line, exit 2.
Nothing here imports `datasets` or `huggingface_hub` until a command runs.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from repo2rlenv.cli.guard import guard
from repo2rlenv.hub.registry import DEFAULT_VERSION

_REVISION_HELP = "Branch to push to (created from main if missing; default: main)."
_VERSION_HELP = "Version of the dataset in registry.json (`harbor run -d NAME@VERSION`)."



def _say(message: str) -> None:
    click.echo(message, err=True)


@click.command()
@click.argument("dataset", type=click.Path(path_type=Path))
@click.option("--repo-id", required=True, help="Hub dataset repo, org/name (created if missing).")
@click.option("--private", is_flag=True, help="Create the repo private (an existing repo keeps its visibility).")
@click.option("--revision", default=None, help=_REVISION_HELP)
@click.option("--commit-message", default=None, help="Commit message (default: Publish N repo2rlenv tasks).")
@click.option("--include-unvalidated", is_flag=True,
              help="Publish even tasks that failed validation, were never validated, or changed since.")
@click.option("--dataset-version", "version", default=DEFAULT_VERSION, show_default=True, help=_VERSION_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print what was pushed as JSON on stdout.")
def push(dataset: Path, repo_id: str, private: bool, revision: str | None, commit_message: str | None,
         include_unvalidated: bool, version: str, as_json: bool) -> None:
    """Publish DATASET to the Hugging Face Hub (token: HF_TOKEN or `hf auth login`)."""

    def body() -> int:
        from repo2rlenv.hub.push import push_dataset

        result = push_dataset(dataset, repo_id, private=private, revision=revision, commit_message=commit_message,
                              include_unvalidated=include_unvalidated, version=version, progress=_say)
        if as_json:
            click.echo(result.model_dump_json(indent=2))
        if result.unvalidated:
            _say(f"warning: published {len(result.unvalidated)} task(s) without a passing validation")
        _say(f"pushed {result.tasks} tasks to {result.repo_id}@{result.revision}: {len(result.uploaded)} files sent, "
             f"{result.unchanged} unchanged, {len(result.deleted)} removed, {len(result.commits)} commit(s)")
        return 0

    guard(body)


@click.command()
@click.argument("repo_id")
@click.argument("out", type=click.Path(path_type=Path))
@click.option("--revision", default=None, help="Branch, tag or commit to pull (default: main).")
@click.option("--json", "as_json", is_flag=True, help="Print what was pulled as JSON on stdout.")
def pull(repo_id: str, out: Path, revision: str | None, as_json: bool) -> None:
    """Rebuild the dataset published at REPO_ID (org/name) in OUT, byte for byte."""

    def body() -> int:
        from repo2rlenv.hub.pull import pull_dataset

        result = pull_dataset(repo_id, out, revision=revision)
        if as_json:
            click.echo(result.model_dump_json(indent=2))
        _say(f"pulled {result.tasks} tasks ({result.files} files) of {result.repo_id} at {result.commit[:12]} "
             f"into {result.root}")
        return 0

    guard(body)


@click.command()
@click.argument("dataset", type=click.Path(path_type=Path))
@click.argument("out", type=click.Path(path_type=Path))
@click.option("--repo-id", default=None,
              help="The repo it will be pushed to, so the card and registry point there (default: none).")
@click.option("--revision", default=None, help=_REVISION_HELP)
@click.option("--include-unvalidated", is_flag=True, help="Include tasks without a passing validation.")
@click.option("--dataset-version", "version", default=DEFAULT_VERSION, show_default=True, help=_VERSION_HELP)
@click.option("--format", "fmt", type=click.Choice(["hub", "rl"]), default="hub", show_default=True,
              help="hub: the folder `push` uploads; rl: a prompt table for RL trainers (TRL, verl) in "
                   "OUT/data/train.parquet, scored with repo2rlenv.scoring.")
@click.option("--json", "as_json", is_flag=True, help="Print what was written as JSON on stdout.")
def export(dataset: Path, out: Path, repo_id: str | None, revision: str | None, include_unvalidated: bool,
           version: str, fmt: str, as_json: bool) -> None:
    """Write to OUT exactly the folder `push` would upload for DATASET (or, with --format rl, its prompt table)."""

    def body() -> int:
        if fmt == "rl":
            return _export_rl(dataset, out, include_unvalidated, as_json)
        from repo2rlenv.hub.connection import check_repo_id
        from repo2rlenv.hub.export import export_dataset
        from repo2rlenv.hub.registry import publish_target

        if repo_id is not None:
            check_repo_id(repo_id)
        target = publish_target(repo_id, revision=revision, version=version, fallback_name=dataset.resolve().name)
        result = export_dataset(dataset, out, target, include_unvalidated=include_unvalidated)
        if as_json:
            click.echo(json.dumps(result.model_dump(mode="json"), indent=2))
        _say(f"exported {result.tasks} tasks ({result.files} files) to {result.root}")
        return 0

    guard(body)


def _export_rl(dataset: Path, out: Path, include_unvalidated: bool, as_json: bool) -> int:
    from repo2rlenv.hub.rl_table import export_rl

    result = export_rl(dataset, out, include_unvalidated=include_unvalidated)
    if as_json:
        click.echo(result.model_dump_json(indent=2))
    _say(f"exported {result.tasks} RL prompts to {out / result.table} (rewards: repo2rlenv.scoring on "
         f"{result.dataset_dir})")
    return 0


COMMANDS = (push, pull, export)

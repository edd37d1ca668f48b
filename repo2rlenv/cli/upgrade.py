"""The `upgrade` command; `repo2rlenv/cli/main.py` registers it with `main.add_command`.

Thin: parse flags, call `repo2rlenv.upgrade.upgrade_dataset`, print a table on stderr (or JSON on stdout
with --json). Errors go through `repo2rlenv.cli.guard.guard`: one line; bad input exits 2.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from repo2rlenv.cli.guard import Failing, guard


@click.command()
@click.argument("dataset", type=click.Path(path_type=Path))
@click.option("--no-validate", "no_validate", is_flag=True,
              help="Skip re-validating each upgraded task (oracle 1.0, empty 0.0) in Docker.")
@click.option("--json", "as_json", is_flag=True, help="Print what was done per task as JSON on stdout.")
def upgrade(dataset: Path, no_validate: bool, as_json: bool) -> None:
    """Re-ship this repo2rlenv's verifier into DATASET's tasks and re-validate each; a task that fails is
    restored. Tasks already at the current verifier version are skipped, so a killed run, rerun, continues."""
    state = Failing()

    def body() -> int:
        from repo2rlenv.dataset.taskdir import DatasetPaths
        from repo2rlenv.errors import UserError
        from repo2rlenv.progress import Reporter
        from repo2rlenv.upgrade import pending_ids, upgrade_dataset

        if not DatasetPaths(dataset).tasks.is_dir() or not pending_ids(DatasetPaths(dataset)):
            raise UserError(f"not a repo2rlenv dataset (no tasks/ with tasks): {dataset}")
        if not no_validate:
            from repo2rlenv.sandbox.docker import docker_client

            docker_client()  # no daemon: one line and exit 2 before any task is touched
        reporter = Reporter(quiet=as_json)
        reporter.current_stage = "validate"
        state.reporter = reporter
        results = upgrade_dataset(dataset, validate=not no_validate, progress=reporter.info)
        rows = [[r.task_id, _version(r.old_version), _version(r.new_version), r.action,
                 r.validation if not r.problems else f"{r.validation}: {'; '.join(r.problems)}"[:160]]
                for r in results]
        reporter.table("upgrade", ["task", "old version", "new version", "action", "validation"], rows)
        if as_json:
            click.echo(json.dumps([r.model_dump(mode="json") for r in results], indent=2))
        return 0 if all(r.ok for r in results) else 1

    guard(body, state)


def _version(version: int | None) -> str:
    return "-" if version is None else str(version)


COMMANDS = [upgrade]

"""`repo2rlenv export`: build the folder a push uploads (see layout.py), for review or for another host.

The folder is written into a hidden staging dir next to OUT and renamed when complete, so OUT is either
the previous folder or the new one, never half of each. OUT may be missing, empty, or an earlier export
or pull (recognised by its card and registry); anything else is refused rather than overwritten.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from repo2rlenv import atomic
from repo2rlenv.errors import UserError
from repo2rlenv.hub.card import CardStats, compute_stats, render_card
from repo2rlenv.hub.dropped import dropped_dependencies
from repo2rlenv.hub.layout import PublishedPaths, list_files
from repo2rlenv.hub.registry import PublishTarget, registry_entries, registry_json
from repo2rlenv.hub.source import LocalDataset, open_dataset
from repo2rlenv.hub.table import table_row, write_table
from repo2rlenv.dataset.manifest import validation_path, write_manifest


class ExportResult(BaseModel):
    """What an export wrote."""

    model_config = ConfigDict(extra="forbid")

    root: Path
    tasks: int
    files: int = Field(description="Files in the folder, all included.")
    stats: CardStats


def build_folder(dataset: LocalDataset, dest: Path, target: PublishTarget) -> ExportResult:
    """Write the published folder for `dataset` into the empty directory `dest`."""
    out = PublishedPaths(dest)
    for task in dataset.tasks:
        shutil.copytree(task.paths.root, out.task(task.task_id).root, symlinks=True)
        record = validation_path(dataset.paths, task.task_id)
        if record.is_file():
            validation_path(out, task.task_id).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(record, validation_path(out, task.task_id))
    # Rows are derived from the copied trees, so the published manifest describes exactly these files.
    write_manifest(out)
    write_table([table_row(task) for task in dataset.tasks], out.table)
    stats = compute_stats(dataset.tasks).model_copy(
        update={"dropped_dependencies": dropped_dependencies(dataset.paths.root)})
    description = f"{stats.tasks} repo2rlenv test_synthesis tasks: write the tests that catch a hidden change"
    task_dirs = [out.task(t.task_id).root.relative_to(dest).as_posix() for t in dataset.tasks]
    atomic.write_text(out.registry, registry_json(registry_entries(target, task_dirs, description)))
    atomic.write_text(out.readme, render_card(stats, target))
    return ExportResult(root=dest, tasks=len(dataset.tasks), files=len(list_files(dest)), stats=stats)


def export_dataset(dataset_dir: Path, out: Path, target: PublishTarget, *,
                   include_unvalidated: bool = False) -> ExportResult:
    """Check `dataset_dir`, then write its published folder to `out` (atomically)."""
    dataset = open_dataset(dataset_dir)
    if not include_unvalidated:
        dataset.require_validated()
    check_out_dir(out, dataset_dir)
    staging = atomic.staging_dir(out.parent, out.name)
    try:
        result = build_folder(dataset, staging, target)
        atomic.publish_dir(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return result.model_copy(update={"root": out})


def check_out_dir(out: Path, source: Path | None = None) -> None:
    """Refuse an OUT that holds something other than an earlier export or pull (or overlaps the source)."""
    if source is not None:
        a, b = out.resolve(), source.resolve()
        if a == b or a.is_relative_to(b) or b.is_relative_to(a):
            raise UserError(f"the output folder {out} must lie outside the dataset {source} (and not contain it)")
    if out.exists() and not out.is_dir():
        raise UserError(f"the output folder {out} is a file")
    if out.is_dir() and any(out.iterdir()) and not _is_published_folder(out):
        raise UserError(f"the output folder {out} is not empty and not an earlier export or pull; "
                        "choose a new folder")


def _is_published_folder(path: Path) -> bool:
    paths = PublishedPaths(path)
    return paths.readme.is_file() and paths.registry.is_file() and paths.tasks.is_dir()

"""The dataset's table: one parquet row per task, written through `datasets` so `load_dataset` reads it as is.

A row is the task's manifest row plus what a trainer needs without opening the task tree (instruction,
broken patch, oracle test) and the whole tree itself (`files`), so a task can be rebuilt from the table
alone. The `datasets` schema is derived from the pydantic model, so the two cannot disagree.
"""

from __future__ import annotations

import base64
import contextlib
import os
import types
from enum import Enum
from pathlib import Path
from typing import Any, Iterator, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field

from repo2rlenv.hub.layout import list_empty_dirs, list_files
from repo2rlenv.hub.source import LocalTask, ValidationStatus
from repo2rlenv.dataset.manifest import ManifestRow


class TaskFile(BaseModel):
    """One file of a task tree."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(description="POSIX path relative to the task directory.")
    content: str = Field(description="The file's text, or its bytes in base64 when they are not UTF-8.")
    encoding: Literal["utf-8", "base64"]
    executable: bool = Field(description="Whether the file has the owner's execute bit (test.sh, solve.sh).")


class TableRow(ManifestRow):
    """One task, as a row of the published table."""

    instruction: str = Field(description="instruction.md: what the agent is asked to do.")
    broken_patch: str = Field(description="tests/broken_patch.diff: A → B (hidden from the agent).")
    oracle_test_path: str = Field(description="Where the agent's test file goes, relative to the workspace.")
    oracle_test: str = Field(description="The reference test file, which scores 1.0 under the verifier.")
    validation_status: ValidationStatus = Field(description="passed, failed, stale (changed since) or missing.")
    files: list[TaskFile] = Field(description="Every file of the task tree; enough to rebuild it exactly.")
    empty_dirs: list[str] = Field(description="Empty directories of the tree (git and the Hub keep none).")


def read_task_file(task_root: Path, rel: str) -> TaskFile:
    path = task_root / rel
    data = path.read_bytes()
    executable = bool(path.stat().st_mode & 0o100)
    try:
        return TaskFile(path=rel, content=data.decode("utf-8"), encoding="utf-8", executable=executable)
    except UnicodeDecodeError:
        return TaskFile(path=rel, content=base64.b64encode(data).decode("ascii"), encoding="base64",
                        executable=executable)


def table_row(task: LocalTask) -> TableRow:
    paths = task.paths
    test_path = task.config.metadata.repo2env.test_synthesis.test_path
    oracle = paths.solution / Path(test_path).name
    return TableRow(
        **task.row.model_dump(),
        instruction=paths.instruction.read_text(encoding="utf-8"),
        broken_patch=paths.broken_patch.read_text(encoding="utf-8") if paths.broken_patch.is_file() else "",
        oracle_test_path=test_path,
        oracle_test=oracle.read_text(encoding="utf-8") if oracle.is_file() else "",
        validation_status=task.status,
        files=[read_task_file(paths.root, rel) for rel in list_files(paths.root)],
        empty_dirs=list_empty_dirs(paths.root),
    )


def write_table(rows: list[TableRow], dest: Path) -> None:
    """Write `rows` as one parquet file through `datasets` (deterministic: same rows, same bytes)."""
    write_parquet(TableRow, rows, dest)


def write_parquet(model: type[BaseModel], rows: list[BaseModel], dest: Path) -> None:
    """`rows` (instances of `model`) as one parquet file, its schema derived from `model`; written to a
    temporary name and renamed, so `dest` is never half a file."""
    import datasets

    features = datasets.Features(model_features(model))
    table = datasets.Dataset.from_list([row.model_dump(mode="json") for row in rows], features=features)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.partial-{os.getpid()}")
    with quiet_progress():
        table.to_parquet(str(tmp))
    os.replace(tmp, dest)


@contextlib.contextmanager
def quiet_progress() -> Iterator[None]:
    """`datasets` without its progress bars (a one-row-group write needs none), the user's setting restored."""
    from datasets.utils import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars

    was_disabled = are_progress_bars_disabled()
    disable_progress_bars()
    try:
        yield
    finally:
        if not was_disabled:
            enable_progress_bars()


_SCALARS: dict[type, str] = {str: "string", int: "int64", float: "float64", bool: "bool"}


def model_features(model: type[BaseModel]) -> dict[str, Any]:
    """The `datasets` feature dict of a pydantic model's fields (nested models → dicts, lists → lists)."""
    return {name: _feature(field.annotation) for name, field in model.model_fields.items()}


def _feature(annotation: Any) -> Any:
    import datasets

    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):  # X | None: parquet columns are nullable anyway
        (inner,) = [a for a in get_args(annotation) if a is not type(None)]
        return _feature(inner)
    if origin is list:
        return [_feature(get_args(annotation)[0])]
    if origin is Literal:
        return datasets.Value("string")
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return model_features(annotation)
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return datasets.Value("string")
    return datasets.Value(_SCALARS[annotation])

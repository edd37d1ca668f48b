"""`repo2rlenv export --format rl`: the dataset as a prompt table for RL trainers.

One row per task, in the shape both TRL and verl read without glue:

- `prompt`: a conversation of one user message — the task's instruction, then (a single-turn policy
  cannot open /workspace) the touched function's source as it is in the agent's version, and how to
  answer: the whole test file in one fenced Python block (`scoring.completion.extract_test_file`);
- `task_id`: the column `scoring.trl.TestReward` reads; `reward_model.ground_truth` is the same id,
  which verl hands to `scoring.verl.compute_score`;
- `data_source`, `ability`, `extra_info` as verl's datasets have them; `test_path`, `repo`, `function`,
  `difficulty`, `siblings` for filtering.

Nothing hidden is in a row: no patch, operator, mutation kind, commit or oracle (the trainer passes every
column to reward functions, and a column can end up in a prompt template).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from repo2rlenv.hub.source import LocalTask
from repo2rlenv.pysource.sections import function_source

DATA_SOURCE = "repo2rlenv/test_synthesis"
ANSWER_FORMAT = ("Answer with the complete test file in one fenced ```python block; it is saved as "
                 "`{test_path}` and graded as described above.")


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: str
    content: str


class RewardModel(BaseModel):
    model_config = ConfigDict(extra="forbid")

    style: str = "rule"
    ground_truth: str = Field(description="The task id.")


class ExtraInfo(BaseModel):
    model_config = ConfigDict(extra="forbid")

    task_id: str
    test_path: str
    index: int


class RlRow(BaseModel):
    """One task as an RL prompt."""

    model_config = ConfigDict(extra="forbid")

    task_id: str
    prompt: list[Message]
    data_source: str = DATA_SOURCE
    ability: str = "software-testing"
    reward_model: RewardModel
    extra_info: ExtraInfo
    test_path: str
    repo: str
    function: str = Field(description="path::qualname of the function the tests are for.")
    difficulty: str
    siblings: int


def prompt_text(task: LocalTask) -> str:
    meta = task.config.metadata.repo2env.test_synthesis
    path, _, qualname = meta.touched_function.partition("::")
    module = task.paths.repo / path
    source = function_source(module.read_text(encoding="utf-8"), qualname) if module.is_file() else ""
    parts = [task.paths.instruction.read_text(encoding="utf-8").rstrip()]
    if source:
        parts.append(f"The function as it is in `/workspace/{path}`:\n\n```python\n{source.rstrip()}\n```")
    parts.append(ANSWER_FORMAT.format(test_path=meta.test_path))
    return "\n\n".join(parts) + "\n"


def rl_row(task: LocalTask, index: int) -> RlRow:
    meta = task.config.metadata.repo2env.test_synthesis
    return RlRow(task_id=task.task_id, prompt=[Message(role="user", content=prompt_text(task))],
                 reward_model=RewardModel(ground_truth=task.task_id),
                 extra_info=ExtraInfo(task_id=task.task_id, test_path=meta.test_path, index=index),
                 test_path=meta.test_path, repo=task.row.repo, function=meta.touched_function,
                 difficulty=task.row.difficulty, siblings=task.row.siblings)


def write_rl_table(rows: list[RlRow], dest: Path) -> None:
    """`rows` as one parquet file (`load_dataset("parquet", data_files=...)`, verl's `data.train_files`)."""
    from repo2rlenv.hub.table import write_parquet

    write_parquet(RlRow, rows, dest)


RL_MARKER = "rl.json"
RL_TABLE = "data/train.parquet"
RL_SCHEMA_VERSION = 1


class RlExport(BaseModel):
    """rl.json: what an RL export holds and where its tasks live (the scorers need the dataset dir)."""

    model_config = ConfigDict(extra="forbid")

    format: str = "repo2rlenv-rl"
    schema_version: int = RL_SCHEMA_VERSION
    dataset_dir: str = Field(description="The task dataset the rewards are computed on (absolute).")
    tasks: int
    table: str = RL_TABLE


def export_rl(dataset_dir: Path, out: Path, *, include_unvalidated: bool = False) -> RlExport:
    """Write the prompt table of `dataset_dir` into `out` (missing, empty, or an earlier RL export)."""
    import shutil

    from repo2rlenv import atomic
    from repo2rlenv.errors import UserError
    from repo2rlenv.hub.source import open_dataset

    dataset = open_dataset(dataset_dir)
    if not include_unvalidated:
        dataset.require_validated()
    a, b = out.resolve(), dataset_dir.resolve()
    if a == b or a.is_relative_to(b) or b.is_relative_to(a):
        raise UserError(f"the output folder {out} must lie outside the dataset {dataset_dir} (and not contain it)")
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not (out / RL_MARKER).is_file())):
        raise UserError(f"the output folder {out} is not empty and not an earlier `export --format rl`; "
                        "choose a new folder")
    result = RlExport(dataset_dir=str(b), tasks=len(dataset.tasks))
    staging = atomic.staging_dir(out.parent, out.name)
    try:
        write_rl_table([rl_row(task, i) for i, task in enumerate(dataset.tasks)], staging / RL_TABLE)
        (staging / RL_MARKER).write_text(result.model_dump_json(indent=2) + "\n")
        atomic.publish_dir(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return result

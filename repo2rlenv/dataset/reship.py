"""Re-ship the current verifier into one task directory: its files in `tests/`, its version in task.toml.

Only what the verifier *is* changes: `tests/verifier*.py` and `tests/test.sh` are replaced by this
repo2rlenv's copies (a module the current verifier no longer has is removed) and task.toml's
`[metadata.repo2env] verifier_version` is set. What the task *grades* stays as it was: verifier_config.json,
B's and the siblings' diffs, A's manifest and archive, the oracle, the environment, the instruction.

Works in place on the directory it is given; `repo2rlenv.upgrade` gives it a staging copy of the task and
publishes it only when complete. Files are replaced by unlinking then writing, never by writing through
an existing file, so a staging copy made of hard links never writes into the task it was copied from.
"""

from __future__ import annotations

import tomllib
from itertools import takewhile

from repo2rlenv import atomic
from repo2rlenv.dataset.task_toml import TaskToml
from repo2rlenv.dataset.taskdir import TaskPaths
from repo2rlenv.errors import UserError
from repo2rlenv.verifiers.bundle import install_verifier

# The shipped verifier's files in a task's tests/: its modules all carry the `verifier` prefix (the payload
# rule, `repo2rlenv.payload`), and test.sh runs them. verifier_config.json is not a module: never matched.
VERIFIER_GLOB = "verifier*.py"


def recorded_version(task: TaskPaths) -> int | None:
    """The verifier version task.toml records; None for a task made before versions were recorded.
    A task.toml this version cannot read is a UserError naming the task."""
    try:
        config = TaskToml.from_toml(task.task_toml.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:  # tomllib's and pydantic's errors are ValueErrors
        raise UserError(f"{task.root.name}: task.toml does not read: {_first_line(exc)}") from exc
    return config.metadata.repo2env.verifier_version


def reship_verifier(task: TaskPaths, version: int) -> None:
    """Replace the verifier files of `task` with the current ones and record `version` in its task.toml."""
    if not task.tests.is_dir():
        raise UserError(f"{task.root.name}: no tests/ dir to ship the verifier into")
    text = _with_version(task.task_toml.read_text(encoding="utf-8"), version)
    for old in [*task.tests.glob(VERIFIER_GLOB), task.test_sh]:
        old.unlink(missing_ok=True)
    install_verifier(task.tests)
    atomic.write_text(task.task_toml, text)


def _with_version(text: str, version: int) -> str:
    """task.toml's text with `verifier_version` set; every other key as it was, the header comment kept."""
    import tomli_w

    data = tomllib.loads(text)
    data["metadata"]["repo2env"]["verifier_version"] = version
    TaskToml.model_validate(data)  # still a task.toml this version reads, with the field where the model wants it
    header = "".join(takewhile(lambda line: line.startswith("#"), text.splitlines(keepends=True)))
    return header + tomli_w.dumps(data)


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]

"""One exception hierarchy for the whole tool, and one table from error class to stage and exit code.

Library code raises these; only `cli.py` turns them into a line and an exit code. A `UserError` means the
input was wrong (bad option, missing path, unknown ref …): exit code 2, nothing written. Anything else is
a stage that failed on the repository: exit code 1, one line `error: STAGE: cause (full output: LOG)`.
"""

from __future__ import annotations

from typing import NamedTuple


class Repo2RLEnvError(Exception):
    """Base of every error repo2rlenv raises on purpose.

    `stage` names where it happened when the raiser knows better than the stage that was running;
    `output` is raw tool output (pip, pytest) that belongs in the log file, not on the terminal."""

    exit_code: int = 1

    def __init__(self, message: str = "", *, stage: str | None = None, output: str = ""):
        super().__init__(message)
        self.stage = stage
        self.output = output


class UserError(Repo2RLEnvError):
    """The user's input cannot work: one line explains why; exit code 2."""

    exit_code = 2


class ConfigError(UserError):
    """A config file, flag or pipeline option is invalid."""


class SourceError(UserError):
    """The repository cannot be opened, cloned or checked out at the ref."""


class SandboxUnavailable(UserError):
    """The requested sandbox cannot be used on this machine (e.g. no Docker daemon)."""


class BaselineError(Repo2RLEnvError):
    """The repository's own test suite cannot serve as a baseline (no tests, none passing): the repo, not
    the user's input, so exit code 1."""


class SandboxError(Repo2RLEnvError):
    """Something failed inside a sandbox that should have worked (image build, exec, copy)."""


class Failure(NamedTuple):
    """How one error class is reported."""

    stage: str  # shown when neither the error nor the running stage names one ("" = none to show)
    exit_code: int
    running_stage_wins: bool  # a stage failure is where it ran; a user error is about the input


# Most specific class first: `classify` takes the first row the error is an instance of.
FAILURES: list[tuple[type[Exception], Failure]] = [
    (ConfigError, Failure("options", 2, running_stage_wins=False)),
    (SourceError, Failure("source", 2, running_stage_wins=False)),
    (SandboxUnavailable, Failure("sandbox", 2, running_stage_wins=False)),
    # Input that is wrong for a command as a whole (not a dataset, a bad folder): no stage to name.
    (UserError, Failure("", 2, running_stage_wins=False)),
    (BaselineError, Failure("baseline", 1, running_stage_wins=False)),
    (SandboxError, Failure("environment", 1, running_stage_wins=True)),
    (Repo2RLEnvError, Failure("run", 1, running_stage_wins=True)),
    # Not raised on purpose: a defect. Still one line and the stage; the traceback goes to the log.
    (Exception, Failure("run", 1, running_stage_wins=True)),
]


def classify(exc: BaseException, running_stage: str | None = None) -> tuple[str, int]:
    """(stage, exit code) for an error raised while `running_stage` ran."""
    for cls, failure in FAILURES:
        if isinstance(exc, cls):
            explicit = getattr(exc, "stage", None)
            if explicit:
                return explicit, failure.exit_code
            if failure.running_stage_wins and running_stage:
                return running_stage, failure.exit_code
            return failure.stage, failure.exit_code
    return running_stage or "run", 1

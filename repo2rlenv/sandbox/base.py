"""What a sandbox is: limits, exec results, the Sandbox/Session protocols and environment scrubbing.

A `Sandbox` prepares an environment for one repo snapshot (a Docker image, or a venv) once; a `Session`
is a warm instance of it (a running container, or a work dir) in which many commands run cheaply.
Paths given to a session are paths *inside* it; `Session.workspace` is where the repo snapshot lives.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal, Mapping, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from repo2rlenv.errors import SandboxError

Isolation = Literal["container", "process"]

# Variables whose names look like credentials never enter a sandbox, whatever the caller passes.
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)


class Limits(BaseModel):
    """Resource limits of one sandboxed command (and of the warm container that runs it)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    timeout_sec: float = Field(600, gt=0, description="Wall clock; the process group is killed past it.")
    memory_mb: int = Field(4096, ge=64, description="Memory (container) or address space (local) limit.")
    cpus: float = Field(1.0, gt=0, description="CPU share (containers only).")
    pids: int = Field(512, ge=16, description="Process/thread limit.")


class ExecResult(BaseModel):
    """The outcome of one command in a sandbox."""

    model_config = ConfigDict(extra="forbid")

    argv: list[str]
    exit_code: int = Field(description="Process exit code; -9/137 style codes when killed.")
    stdout: str
    stderr: str
    timed_out: bool = False
    duration_sec: float = 0.0

    def tail(self, lines: int = 20) -> str:
        """The last lines of stderr+stdout, for error messages."""
        text = (self.stderr.strip() + "\n" + self.stdout.strip()).strip()
        return "\n".join(text.splitlines()[-lines:])


_ANSI = re.compile(r"(?:\x1b)?\[[0-9;]*m")
_DOCKER_STEP_FAILED = re.compile(r"^The command '.*' returned a non-zero code: \d+$", re.S)


def build_failure(message: str, output: str) -> SandboxError:
    """A SandboxError whose message is one line naming the cause (the last error line of `output`) and
    whose `output` holds the whole build log, for the log file the CLI writes."""
    lines = [_ANSI.sub("", line).strip() for line in output.splitlines()]
    # Docker's own last line ("The command '/bin/bash -c …' returned a non-zero code: 1") repeats the
    # whole install command and says only that it failed.
    lines = [line for line in lines if line]
    lines = [line for line in lines if not _DOCKER_STEP_FAILED.match(line)] or lines
    errors = [line for line in lines if re.match(r"^(error|ERROR|[\w.]*Error\b)", line)]
    # pip's summary ("error: metadata-generation-failed") says less than the backend's own exception
    # just above it, so prefer a line naming an exception (`urllib.error.URLError: …` too).
    named = [line for line in errors if re.match(r"^(?:\w+\.)*\w+Error\b", line)]
    cause = (named or errors or lines or ["no output"])[-1][:300]
    exc = SandboxError(f"{message}: {cause}")
    exc.output = output  # read by the CLI's failure report (errors.Repo2RLEnvError.output)
    return exc


def scrub_env(env: Mapping[str, str] | None) -> dict[str, str]:
    """Drop every variable whose name looks like a secret."""
    return {k: v for k, v in (env or {}).items() if not _SECRET_NAME.search(k)}


def base_env(home: str, tmp: str, path: str) -> dict[str, str]:
    """The whole environment a sandboxed command starts from: nothing inherited from the host."""
    return {
        "PATH": path,
        "HOME": home,
        "TMPDIR": tmp,
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",
        "PYTHONUNBUFFERED": "1",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "NO_COLOR": "1",
    }


@runtime_checkable
class Session(Protocol):
    """A warm sandbox instance; commands run in it one after another."""

    workspace: str  # the repo snapshot
    python: str  # interpreter with pytest, coverage and the repo's dependencies
    scratch: str  # a writable dir for run artefacts (JUnit XML, coverage data, helper scripts)

    def exec(
        self, argv: list[str], *, cwd: str | None = None, env: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> ExecResult: ...

    def write_files(self, files: Mapping[str, bytes | str]) -> None: ...

    def read_file(self, path: str) -> bytes | None: ...

    def close(self) -> None: ...


@runtime_checkable
class Sandbox(Protocol):
    """A way to run a repo's code: prepared once per repo snapshot, opened as warm sessions."""

    name: str
    isolation: Isolation
    network_isolated: bool

    def prepare(self, repo_dir: Path) -> None: ...

    def open(self) -> Session: ...

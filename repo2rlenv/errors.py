"""One exception hierarchy for the whole tool.

Library code raises these; only `cli.py` turns them into exit codes. `UserError` means the input was
wrong (bad option, missing path, repo without tests …) and maps to exit code 2 with one clear line.
"""

from __future__ import annotations


class Repo2RLEnvError(Exception):
    """Base of every error repo2rlenv raises on purpose."""

    exit_code: int = 1


class UserError(Repo2RLEnvError):
    """The user's input cannot work: one line explains why; exit code 2."""

    exit_code = 2


class ConfigError(UserError):
    """A config file, flag or pipeline option is invalid."""


class SourceError(UserError):
    """The repository cannot be opened, cloned or checked out at the ref."""


class SandboxUnavailable(UserError):
    """The requested sandbox cannot be used on this machine (e.g. no Docker daemon)."""


class BaselineError(UserError):
    """The repository's own test suite cannot serve as a baseline (no tests, none passing)."""


class SandboxError(Repo2RLEnvError):
    """Something failed inside a sandbox that should have worked (image build, exec, copy)."""

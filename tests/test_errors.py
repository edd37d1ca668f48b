"""The error table: every error class maps to one stage and one exit code; user errors are exit 2, stage
failures exit 1 and are reported as the stage that was running."""

from __future__ import annotations

import pytest

from repo2rlenv.errors import (FAILURES, BaselineError, ConfigError, Repo2RLEnvError, SandboxError,
                               SandboxUnavailable, SourceError, UserError, classify)


@pytest.mark.parametrize(
    ("exc", "running", "expected"),
    [(ConfigError("bad option"), "mining", ("options", 2)),
     (SourceError("repository not found"), "source", ("source", 2)),
     # A user error raised late (say, commit_pair on a plain directory) is still about the input.
     (SourceError("needs git history"), "mining", ("source", 2)),
     (SandboxUnavailable("no Docker daemon"), None, ("sandbox", 2)),
     (UserError("not a dataset"), "validate", ("", 2)),
     (BaselineError("no test passes at the ref"), "baseline", ("baseline", 1)),
     # A sandbox error is where it happened: an image build, or the coverage report of the baseline.
     (SandboxError("image build failed"), "environment", ("environment", 1)),
     (SandboxError("coverage report failed"), "baseline", ("baseline", 1)),
     (SandboxError("no stage known"), None, ("environment", 1)),
     (SandboxError("explicit", stage="validate"), "synthesis", ("validate", 1)),
     (Repo2RLEnvError("generic"), "gates", ("gates", 1)),
     (KeyError("a defect"), "emit", ("emit", 1))],
)
def test_classify(exc, running, expected):
    assert classify(exc, running) == expected


def test_exit_2_only_for_user_errors():
    for cls, failure in FAILURES:
        assert (failure.exit_code == 2) == (isinstance(cls, type) and issubclass(cls, UserError)), cls
    assert not issubclass(BaselineError, UserError), "a repo whose suite fails is not bad input"


def test_errors_carry_raw_output():
    exc = SandboxError("pip failed", output="ERROR: long pip log")
    assert exc.output == "ERROR: long pip log" and str(exc) == "pip failed"

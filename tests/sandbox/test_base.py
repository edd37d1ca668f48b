"""Build failures: one line naming the cause, the whole log kept for the log file."""

from __future__ import annotations

from repo2rlenv.sandbox.base import build_failure

PIP_LOG = """\
Step 7/7 : RUN /opt/venv/bin/python -m pip install -q -e .
  error: subprocess-exited-with-error
  × Getting requirements to build editable did not run successfully.
  LookupError: setuptools-scm was unable to detect version for /workspace.
  [end of output]
error: metadata-generation-failed
"""


def test_the_backends_exception_is_the_cause_and_the_log_is_kept():
    exc = build_failure("building the sandbox image for demo failed", PIP_LOG)
    assert str(exc) == ("building the sandbox image for demo failed: "
                        "LookupError: setuptools-scm was unable to detect version for /workspace.")
    assert exc.output == PIP_LOG


def test_without_an_error_line_the_last_line_is_the_cause():
    assert str(build_failure("x failed", "a\nb\n\n")) == "x failed: b"
    assert str(build_failure("x failed", "")) == "x failed: no output"

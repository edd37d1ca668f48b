"""Build failures: one line naming the cause, the whole log kept for the log file."""

from __future__ import annotations

from repo2rlenv.failures import cause_of
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


def test_a_build_step_that_reaches_for_the_network_is_named_not_dockers_command_line():
    # A build backend plugin downloading a file while pip gets the build requirements; docker's last line
    # repeats the whole install command and says only that it failed.
    log = ("Step 6/8 : RUN /opt/venv/bin/python -m pip install -q -e '.[test]'\n"
           "\x1b[91m  error: subprocess-exited-with-error\n"
           "  × Getting requirements to build editable did not run successfully.\n"
           "      socket.gaierror: [Errno -2] Name or service not known\n"
           "      During handling of the above exception, another exception occurred:\n"
           "      urllib.error.URLError: <urlopen error [Errno -2] Name or service not known>\n"
           "      [end of output]\n"
           "\x1b[0m\x1b[91merror: subprocess-exited-with-error\n"
           "The command '/bin/bash -c /opt/venv/bin/python -m pip install -q -e '.[test]' && "
           "/opt/venv/bin/python -m pip install -q 'pytest>=8,<10'' returned a non-zero code: 1\n")
    exc = build_failure("building the sandbox image for x failed", log)
    assert str(exc) == ("building the sandbox image for x failed: urllib.error.URLError: <urlopen error [Errno -2] "
                        "Name or service not known>")
    assert exc.output == log
    assert cause_of(str(exc), exc.output) == "the network is unreachable from the sandbox"
    # Nothing but docker's line: it is still better than no cause.
    only = build_failure("building x failed", "The command '/bin/sh -c false' returned a non-zero code: 1\n")
    assert str(only) == "building x failed: The command '/bin/sh -c false' returned a non-zero code: 1"

"""A failure as one line with a cause a user can act on; the raw output in a log file."""

from __future__ import annotations

from pathlib import Path

import pytest

from repo2rlenv.errors import SandboxError
from repo2rlenv.failures import cause_of, failure_line, raw_output, write_log


@pytest.mark.parametrize(
    ("message", "output", "needle"),
    [("building the sandbox image failed: x", "LookupError: setuptools-scm was unable to detect version for /w",
      "reads the version from git"),
     ("building failed", "\x1b[91merror: metadata-generation-failed\x1b[0m", "could not build the project's metadata"),
     ("building failed", "[91merror: subprocess-exited-with-error", "a build step of the project failed"),
     ("x", "ERROR: No matching distribution found for nosuchpkg==9", "no distribution for nosuchpkg==9"),
     ("pytest could not run the suite", "E   ModuleNotFoundError: No module named 'hypothesis'",
      "a module is missing: hypothesis"),
     ("coverage report failed: No data to report.", "", "coverage recorded no data"),
     ("building failed", "error: subprocess-exited-with-error\n  src/_speedups.c:1:10: fatal error: Python.h: "
      "No such file or directory", "builds a C extension and the image has no C compiler"),
     ("building failed", "error: command 'gcc' failed: No such file or directory\nerror: subprocess-exited-with-error",
      "builds a C extension"),
     ("no test passes at the ref (1 collected)", "", "no test passes at the ref (1 collected)")],
)
def test_cause_table(message, output, needle):
    assert needle in cause_of(message, output)


def test_a_generic_pip_summary_gets_the_builds_own_exception():
    output = "Traceback …\nValueError: project.version must be set\n[end of output]\nerror: metadata-generation-failed"
    assert cause_of("building failed", output) == ("pip could not build the project's metadata: "
                                                   "ValueError: project.version must be set")


def test_a_message_that_names_its_cause_keeps_it():
    # The sandbox names the build's exception in its message (sandbox.base.build_failure): not replaced.
    cause = cause_of("building the sandbox image for x failed: KeyError: 'name'", "ERROR: pip noise\nmore")
    assert cause == "building the sandbox image for x failed: KeyError: 'name'"


def test_unknown_output_keeps_the_message_and_the_last_error_line():
    cause = cause_of("building the image failed: a | b | c", "Step 3/5\nERROR: pip is sad\nmore noise")
    assert cause == "building the image failed: ERROR: pip is sad"
    assert len(cause_of("x" * 1000)) <= 240


def test_log_holds_the_whole_chain_and_the_line_points_at_it(tmp_path: Path):
    class BuildError(Exception):
        build_log = [{"stream": "Step 1/3 : FROM base"}, {"error": "pip: the long tale"}]

    try:
        try:
            raise BuildError("returned a non-zero code: 1")
        except BuildError as inner:
            raise SandboxError("building the sandbox image failed: tail", output="pip's own output") from inner
    except SandboxError as exc:
        log = write_log(exc, "environment", tmp_path / "logs")
        line = failure_line("environment", exc, log)
        assert "pip: the long tale" in raw_output(exc)
    text = log.read_text()
    assert log == tmp_path / "logs" / "environment.log"
    for needle in ("pip's own output", "Step 1/3 : FROM base", "pip: the long tale", "Traceback"):
        assert needle in text
    assert line.startswith("error: environment: building the sandbox image failed")
    assert line.endswith(f"(full output: {log})") and "\n" not in line


def test_a_defect_says_internal_error():
    assert failure_line("mining", KeyError("k")).startswith("error: mining: internal error (KeyError")


def test_a_long_cause_is_cut_between_words_and_keeps_a_url_whole():
    from repo2rlenv.failures import _MAX_CAUSE, _short

    url = "http://127.0.0.1:8000/v1/chat/completions?" + "x" * 40
    text = _short("the model " + "failed again " * 17 + f"at {url} and more words after it")
    assert text.endswith(" …") and len(text) <= _MAX_CAUSE + len(url)
    words = text[:-2].split()
    assert all(w in ("the", "model", "failed", "again", "at", url, "and", "more", "words", "after", "it") for w in words)

"""The Docker build log of a failed build, read whole from the SDK's one-shot iterator."""

from __future__ import annotations

from repo2rlenv.sandbox.docker import build_log_text


def test_the_whole_build_log_is_read_once():
    class BuildError(Exception):
        build_log = iter([{"stream": "Step 1/2 : FROM x\n"}, {"stream": "LookupError: no version\n"},
                          {"error": "The command returned a non-zero code: 1"}, "noise"])

    assert build_log_text(BuildError("boom")) == (
        "Step 1/2 : FROM x\nLookupError: no version\nThe command returned a non-zero code: 1\n")
    assert build_log_text(RuntimeError("no log")) == "no log"

"""Probe run inside a sandboxed copy of a repo: record, replay and check calls of one function.

Standalone on purpose: it is copied, with its sibling ``probe_*.py`` files (the whole folder, `repo2rlenv.payload`),
into a scratch directory and run as ``python probe.py <harvest|replay|check> --spec IN.json --out OUT.json``
with the repo root as the working directory and its import root on PYTHONPATH. It needs only the standard
library and pytest, and runs on the repo's own Python, so it avoids syntax newer than 3.8.

- ``harvest`` (``probe_harvest.py``) runs the given tests under a profile hook and records the calls
  that reach the target as *value specs* (JSON that re-creates the value), plus signatures;
- ``replay`` (``probe_replay.py``) re-creates each recorded call, runs it under a per-call time limit and
  records its outcome as facets a test can assert;
- ``check`` (here) writes a pytest file into the repo and reports each test's outcome. It needs no
  sibling file, so a caller that only checks files may ship this one alone.

Value specs are plain dicts tagged by ``t`` (``probe_values.py``); the host reads them with
``oracle.values.Value``. Output is deterministic: every dict is built in a fixed order (declaration order
for fields, sorted names for attributes, sorted items for sets). Whatever goes wrong inside a call is an
outcome, never a crash: the probe always writes OUT.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback

MAX_TEXT = 2000


class ReportCollector:
    """A pytest plugin recording each test function's outcome (failed if any phase failed)."""

    def __init__(self):
        self.results = {}
        self.collection_errors = []

    def pytest_runtest_logreport(self, report):
        name = report.nodeid.split("::")[-1]
        previous = self.results.get(name)
        if report.failed:
            self.results[name] = "failed"
        elif report.skipped and previous != "failed":
            self.results[name] = "skipped"
        elif report.when == "call" and report.passed and previous is None:
            self.results[name] = "passed"

    def pytest_collectreport(self, report):
        if report.failed:
            self.collection_errors.append(str(report.longrepr)[-MAX_TEXT:])


def check(spec):
    import pytest

    path = os.path.join(os.getcwd(), spec["test_path"])
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(spec["source"])
    collector = ReportCollector()
    code = int(pytest.main([spec["test_path"], "-q", "-p", "no:cacheprovider"], plugins=[collector]))
    return {"exit_code": code, "results": collector.results, "collection_errors": collector.collection_errors, "error": None}


def harvest(spec):
    import probe_harvest  # a sibling file, imported only when used: `check` works with this file alone

    return probe_harvest.harvest(spec)


def replay(spec):
    import probe_replay

    return probe_replay.replay(spec)


# A table others may extend or replace entries of (the LLM oracle's checker swaps in its own `check`).
MODES = {"harvest": harvest, "replay": replay, "check": check}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=sorted(MODES))
    parser.add_argument("--spec", required=True)
    parser.add_argument("--out", required=True)
    ns = parser.parse_args(argv)
    with open(ns.spec, encoding="utf-8") as fh:
        spec = json.load(fh)
    try:
        result = MODES[ns.mode](spec)
    except BaseException as exc:  # the host reads the reason from OUT.json instead of a traceback
        cls = type(exc)
        result = {
            "error": "%s.%s: %s" % (cls.__module__, cls.__qualname__, str(exc)[:MAX_TEXT]),
            "trace": traceback.format_exc()[-MAX_TEXT:],
        }
    with open(ns.out, "w", encoding="utf-8") as fh:
        # Not sort_keys: a dataclass's or named tuple's fields keep their declared order (a named tuple
        # compares by position). Every dict here is built in a deterministic order instead.
        json.dump(result, fh)
    return 0


if __name__ == "__main__":
    sys.exit(main())

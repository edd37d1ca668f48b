"""What one test run produced: statuses, and per-case outcomes from JUnit XML.

Everything here reads files the run wrote as the unprivileged uid, so nothing is trusted: a planted
symlink, FIFO or oversized file is "no result", never something the root verifier follows or waits on.

Stdlib only: copied verbatim into every task.
"""

from __future__ import annotations

import os
import stat
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

MAX_JUNIT_BYTES = 32 * 1024 * 1024
MAX_COVERAGE_BYTES = 64 * 1024 * 1024


class Status(str, Enum):
    """How a run ended."""

    ok = "ok"
    collection_error = "collection_error"  # the test file did not import / collect
    timeout = "timeout"
    crashed = "crashed"  # no usable JUnit XML (killed, os._exit, pytest internal error)
    not_run = "not_run"  # not needed: the reward was already determined


class Outcome(str, Enum):
    """One case's result in one run."""

    passed = "passed"
    failed = "failed"
    error = "error"
    skipped = "skipped"
    missing = "missing"  # not reported by a run that otherwise worked
    not_run = "not_run"


FAILING = frozenset({Outcome.failed, Outcome.error, Outcome.missing})
_CHILD_OUTCOME = {"failure": Outcome.failed, "error": Outcome.error, "skipped": Outcome.skipped}
_RANK = {Outcome.passed: 0, Outcome.skipped: 1, Outcome.failed: 2, Outcome.error: 3}


@dataclass(slots=True)
class RunResult:
    """What one run of the submission on one variant produced."""

    variant: str
    status: Status
    seconds: float = 0.0
    returncode: int | None = None
    cases: dict[str, Outcome] = field(default_factory=dict)
    covered: list[int] | None = None
    output_tail: str = ""
    leftover_processes: int = 0
    via: str | None = None  # how the run process was started: zygote or subprocess


def read_run_file(path: Path, limit: int) -> bytes | None:
    """Bytes of a file the run uid wrote, or None unless it is a regular file (not a symlink, FIFO or
    device, which could make the root verifier hang or read elsewhere) of at most `limit` bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        return fh.read(limit + 1)[:limit]


def parse_junit(path: Path) -> tuple[dict[str, Outcome], bool] | None:
    """(outcome per node id, whether collection failed) from pytest's JUnit XML; None if unusable."""
    data = read_run_file(path, MAX_JUNIT_BYTES)
    try:
        root = ET.fromstring(data) if data else None
    except ET.ParseError:
        root = None
    if root is None:
        return None
    cases: dict[str, Outcome] = {}
    collection_failed = False
    for case in root.iter("testcase"):
        classname, name = case.get("classname", ""), case.get("name", "")
        problems = [child for child in case if child.tag in ("failure", "error", "skipped")]
        messages = {child.get("message", "") for child in problems}
        if (classname == "pytest" and name == "internal") or "collection failure" in messages:
            collection_failed = True  # not a case of the submission: a whole-file problem
            continue
        if "collection skipped" in messages:
            continue
        # A teardown error adds a second child to a case, and a node id can repeat: the worst one wins.
        outcome = max((_CHILD_OUTCOME[c.tag] for c in problems), key=_RANK.__getitem__, default=Outcome.passed)
        node_id = f"{classname}::{name}" if classname else name
        cases[node_id] = max(outcome, cases.get(node_id, Outcome.passed), key=_RANK.__getitem__)
    return cases, collection_failed

"""What one test run produced: its status, what it collected, each case's outcome (from the outcome
plugin's JSON lines), the guard's state and refusals, and the covered lines of a traced run.

Everything here reads files the run wrote as its own uid, so nothing is trusted: a planted symlink,
FIFO or oversized file is "no result", never something the root verifier follows or waits on, and a
line that is not what the plugin writes makes the run's outcomes unusable (`garbled`).

Stdlib only: copied verbatim into every task.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

try:
    from . import verifier_guard as vguard
except ImportError:  # run as a script from /tests: the modules are plain siblings
    import verifier_guard as vguard  # type: ignore[no-redef]

MAX_OUTCOMES_BYTES = 32 * 1024 * 1024
MAX_COVERAGE_BYTES = 64 * 1024 * 1024
MAX_SMALL_BYTES = 64 * 1024
OUTCOMES_FILE, COVERED_FILE, GUARD_FILE, REFUSALS_FILE = "outcomes.jsonl", "covered.json", "guard.json", "refusals.log"


class Status(str, Enum):
    """How a run ended."""

    ok = "ok"  # the session finished and reported
    timeout = "timeout"
    crashed = "crashed"  # no usable report (killed, os._exit, pytest internal error, garbled output)
    not_run = "not_run"  # not needed: the reward was already determined


class Outcome(str, Enum):
    """One case's result in one run."""

    passed = "passed"
    failed = "failed"
    error = "error"
    skipped = "skipped"
    missing = "missing"  # collected but never reported
    not_run = "not_run"


FAILING = frozenset({Outcome.failed, Outcome.error})
_OUTCOMES = {o.value: o for o in (Outcome.passed, Outcome.failed, Outcome.error, Outcome.skipped)}


@dataclass(slots=True)
class RunResult:
    """What one run of the submission on one variant produced."""

    variant: str
    status: Status
    seconds: float = 0.0
    returncode: int | None = None
    cpu: float | None = None  # CPU seconds of the run process, when measured
    collected: list[str] | None = None  # node ids, in collection order; None when never reported
    collect_errors: list[str] = field(default_factory=list)
    cases: dict[str, Outcome] = field(default_factory=dict)
    covered: list[int] | None = None
    output_tail: str = ""
    leftover_processes: int = 0
    via: str | None = None  # how the run process was started: zygote or subprocess
    guard: dict = field(default_factory=dict)  # what the kernel barrier applied (landlock ABI, seccomp)
    refusals: list[str] = field(default_factory=list)

    def outcome(self, case: str) -> Outcome:
        if self.status == Status.not_run:
            return Outcome.not_run
        return self.cases.get(case, Outcome.missing)

    @property
    def clean(self) -> bool:
        """The session ran to its end, collected without errors and reported every case it collected."""
        return (self.status == Status.ok and self.collected is not None and not self.collect_errors
                and all(c in self.cases for c in self.collected))


def read_run_file(path: Path, limit: int) -> bytes | None:
    """Bytes of a file the run uid wrote, or None unless it is a regular file (not a symlink, FIFO or
    device, which could make the root verifier hang or read elsewhere) of at most `limit` bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)[:limit]
    except OSError:  # e.g. a directory planted where the file was expected (EISDIR)
        return None
    finally:
        os.close(fd)


# What parsing a file the run wrote can raise: every one is the run's failure, never the verifier's (an
# unhashable value where a str was expected is a TypeError: red team round 2).
RUN_DATA_ERRORS = (ValueError, TypeError, RecursionError, MemoryError)


def read_outcomes(result: RunResult, out_dir: Path) -> None:
    """Fill `result` from the plugin's lines; a run whose lines are missing or not the plugin's is
    `crashed`, a run that never said it finished likewise."""
    data = read_run_file(out_dir / OUTCOMES_FILE, MAX_OUTCOMES_BYTES)
    finished = False
    try:
        for line in (data or b"").decode("utf-8").splitlines():
            record = json.loads(line)
            if not isinstance(record, dict) or len(record) != 1 and set(record) != {"case", "outcome"}:
                raise ValueError("not a plugin line")
            if "collected" in record and isinstance(record["collected"], list) and result.collected is None \
                    and all(isinstance(c, str) for c in record["collected"]):
                result.collected = list(record["collected"])
            elif isinstance(record.get("collect_error"), str):
                result.collect_errors.append(record["collect_error"])
            # `outcome` is checked to be a str before the lookup: a list or dict there is unhashable, and
            # the TypeError escaped as the verifier's own fault (red team round 2).
            elif isinstance(record.get("case"), str) and isinstance(record.get("outcome"), str) \
                    and record["outcome"] in _OUTCOMES:
                previous = result.cases.get(record["case"])
                if previous is not None and previous != _OUTCOMES[record["outcome"]]:
                    raise ValueError("a case reported twice")
                result.cases[record["case"]] = _OUTCOMES[record["outcome"]]
            elif isinstance(record.get("finished"), int) and not isinstance(record.get("finished"), bool):
                finished = True
            else:
                raise ValueError("not a plugin line")
    except RUN_DATA_ERRORS:  # the run wrote it: its failure (UnicodeDecodeError is a ValueError)
        result.status, result.cases, result.collected = Status.crashed, {}, None
        return
    if not finished and result.status == Status.ok:
        result.status = Status.crashed


def read_guard(result: RunResult, out_dir: Path) -> None:
    """The kernel barrier's state and the hook's refusals (diagnostics: the run could rewrite both)."""
    try:
        guard = json.loads(read_run_file(out_dir / GUARD_FILE, MAX_SMALL_BYTES) or b"{}")
        result.guard = guard if isinstance(guard, dict) else {}
        json.dumps(result.guard)  # it goes into the details: a nesting json cannot write back is dropped
    except RUN_DATA_ERRORS:
        result.guard = {}
    text = (read_run_file(out_dir / REFUSALS_FILE, MAX_SMALL_BYTES) or b"").decode("utf-8", "replace")
    result.refusals = [line for line in text.splitlines() if line.strip()][:20]


def read_covered(out_dir: Path, key: str) -> list[int]:
    """The covered lines of a traced run: those of the recorder's records signed with this run's key
    (`verifier_guard.signed_lines`; the run can write anything into its dir, but not a valid record)."""
    data = read_run_file(out_dir / COVERED_FILE, MAX_COVERAGE_BYTES)
    return sorted(vguard.signed_lines(data or b"", key))

"""One isolated pytest run of the submission on a prepared copy: environment, limits, uid, results.

Each run: a fresh empty HOME and TMPDIR, a from-scratch environment (no inherited PYTHONPATH, no
secrets), pytest with plugin autoloading off, a wall-clock timeout that kills the whole process group
(and anything left in its session), rlimits on memory, processes, file size and core dumps, and — when
the verifier is root — an unprivileged uid/gid, so tests cannot write the reward, site-packages or
`/tests`, and cannot read the hidden workspace or grading files. What a run produced is read by
`verifier_results` (JUnit XML outcomes; line coverage on the A run only). The process itself is a
child of the warm zygote, or a fresh interpreter when there is none (`verifier_launch`).

Runs are sequential on purpose: every variant must run at the same absolute path, and state a test
leaves in the shared temp folders is removed between runs. Every run gets the same job — same paths,
same log file, same arguments — so nothing but the copy's content tells the variants apart.

Stdlib only: copied verbatim into every task.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:
    from . import verifier_workspace as vws
    from .verifier_launch import Launcher
    from .verifier_layout import (COVERAGE_REQUEST, COVERED_FILE, NOBODY, PROBE_LOG, RUN_LOG, Layout, make_job,
                                  probe_job, start_launcher)
    from .verifier_results import MAX_COVERAGE_BYTES, RunResult, Status, parse_junit, read_run_file
except ImportError:  # run as a script from /tests: the modules are plain siblings
    import verifier_workspace as vws  # type: ignore[no-redef]
    from verifier_launch import Launcher  # type: ignore[no-redef]
    from verifier_layout import (COVERAGE_REQUEST, COVERED_FILE, NOBODY, PROBE_LOG, RUN_LOG,  # type: ignore[no-redef]
                                 Layout, make_job, probe_job, start_launcher)
    from verifier_results import MAX_COVERAGE_BYTES, RunResult, Status, parse_junit, read_run_file  # type: ignore[no-redef]

# World-writable places a test (as the run uid) could leave a marker for a later run.
SHARED_TMP_ROOTS = ("/tmp", "/var/tmp", "/dev/shm")

__all__ = ["COVERAGE_REQUEST", "COVERED_FILE", "NOBODY", "PROBE_LOG", "RUN_LOG", "Layout", "Limits", "Runner",
           "make_job", "probe", "probe_job", "read_covered", "start_launcher"]


@dataclass(frozen=True, slots=True)
class Limits:
    """Per-run resource limits."""

    timeout_sec: float
    memory_mb: int
    nproc: int = 128
    fsize_mb: int = 512


def probe(launcher: Launcher, layout: Layout, owner: tuple[int, int]) -> str | None:
    """None when `owner` can use the interpreter with pytest and coverage; else why not."""
    log = layout.logs / PROBE_LOG
    try:
        code = launcher.probe(probe_job(layout, launcher.python, owner), log=log, timeout=60)
    except OSError as exc:  # e.g. the run uid cannot reach the scratch dir or the interpreter
        return f"{type(exc).__name__}: {exc}"
    if code == 0:
        return None
    lines = _tail(log).strip().splitlines()
    return "timeout" if code is None else (lines[-1] if lines else f"exit code {code}")


# --------------------------------------------------------------------------- leftovers

def shared_tmp_snapshot(uid: int) -> dict[str, set[str]]:
    """Entries the run uid already owned in the shared temp roots before any run (never removed)."""
    snap: dict[str, set[str]] = {}
    for root in SHARED_TMP_ROOTS:
        try:
            snap[root] = {e.name for e in os.scandir(root) if e.stat(follow_symlinks=False).st_uid == uid}
        except OSError:
            snap[root] = set()
    return snap


def clean_shared_tmp(uid: int, before: dict[str, set[str]]) -> list[str]:
    """Remove what the run uid created in the shared temp roots since `before`; returns the removed paths."""
    removed = []
    for root, keep in before.items():
        try:
            entries = list(os.scandir(root))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.name in keep or entry.stat(follow_symlinks=False).st_uid != uid:
                    continue
                vws.remove_tree(Path(entry.path))
                removed.append(entry.path)
            except OSError:
                continue
    return removed


def _fresh_dir(path: Path, owner: tuple[int, int] | None) -> None:
    vws.remove_tree(path)
    path.mkdir(mode=0o700)
    if owner is not None:
        os.chown(path, *owner)


def _tail(path: Path, size: int = 3000) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(max(0, os.fstat(fh.fileno()).st_size - size))
            return fh.read().decode("utf-8", "replace")
    except OSError:
        return ""


# --------------------------------------------------------------------------- the runner

@dataclass(slots=True)
class Runner:
    """Runs the submission's pytest on whatever copy is at `layout.ws`."""

    layout: Layout
    launcher: Launcher
    limits: Limits
    import_roots: list[str]
    submission: str
    target_file: str
    owner: tuple[int, int] | None  # (uid, gid) to drop to; None: run as ourselves
    tmp_snapshot: dict[str, set[str]] = field(default_factory=dict)
    nproc: int | None = None  # RLIMIT_NPROC, fixed at the first job so that every job is the same

    def _limits(self) -> dict[str, int]:
        if self.nproc is None:
            self.nproc = self.limits.nproc
            if self.owner is None:  # RLIMIT_NPROC counts all of our uid's processes, not only this run's
                self.nproc += sum(1 for e in os.listdir("/proc") if e.isdigit())
        return {"AS": self.limits.memory_mb * 1024 * 1024, "NPROC": self.nproc,
                "FSIZE": self.limits.fsize_mb * 1024 * 1024, "CORE": 0, "CPU": int(self.limits.timeout_sec) + 5}

    def job(self) -> dict[str, Any]:
        """What the run process does: the same for every variant."""
        layout = self.layout
        junit = layout.out / "junit.xml"
        argv = [
            self.submission, "-p", "no:cacheprovider", "-p", "no:randomly", f"--junitxml={junit}",
            "-q", "--no-header", "--tb=short", "-o", "addopts=", f"--rootdir={layout.ws}",
            "-o", "python_files=test_*.py *_test.py", "-o", "python_classes=Test",
            "-o", "python_functions=test", "-o", "junit_family=xunit2", "-o", "junit_logging=no",
            "-o", "required_plugins=",  # plugins are never autoloaded here: a requirement would abort every run
        ]
        return make_job(layout, self.launcher.python, roots=self.import_roots, owner=self.owner,
                        limits=self._limits(), argv=argv, log=RUN_LOG)

    def run(self, variant: str, *, coverage: bool) -> RunResult:
        """Run the submission on the copy currently at `layout.ws`."""
        for path in (self.layout.home, self.layout.tmp, self.layout.out):
            _fresh_dir(path, self.owner)
        request = self.layout.boot / COVERAGE_REQUEST
        if coverage:
            request.write_text(json.dumps({"target": str(self.layout.ws / self.target_file)}), encoding="utf-8")
            os.chmod(request, 0o644)
        log = self.layout.logs / RUN_LOG
        try:
            launched = self.launcher.launch("run", self.job(), log=log, timeout=self.limits.timeout_sec)
        finally:
            request.unlink(missing_ok=True)
        if self.owner is not None:
            clean_shared_tmp(self.owner[0], self.tmp_snapshot)
        result = RunResult(variant, Status.ok, round(launched.seconds, 3), launched.returncode,
                           output_tail=_tail(log), leftover_processes=launched.leftovers, via=launched.via.value)
        parsed = None if launched.timed_out else parse_junit(self.layout.out / "junit.xml")
        if launched.timed_out:
            result.status = Status.timeout
        elif parsed is None:
            result.status = Status.crashed
        else:
            result.cases, collection_failed = parsed
            if collection_failed:
                result.status = Status.collection_error
        if coverage and not launched.timed_out:
            result.covered = read_covered(self.layout.out / COVERED_FILE)
        return result


def read_covered(path: Path) -> list[int]:
    """The covered lines the A run reported (written by the run uid: anything unusable means none)."""
    data = read_run_file(path, MAX_COVERAGE_BYTES)
    try:
        lines = json.loads(data) if data else []
    except ValueError:
        return []
    if not isinstance(lines, list) or not all(type(n) is int for n in lines):
        return []
    return sorted(set(lines))

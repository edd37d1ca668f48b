"""Test runs of the submission on prepared copies: their jobs, limits, uids, and what they produced.

Each run: its own copy, HOME, TMPDIR and output dir (`verifier_layout.RunDirs`), a from-scratch
environment (no inherited PYTHONPATH, no secrets), pytest with plugin autoloading off and the outcome
plugin on, rlimits on memory, processes, file size, CPU and core dumps, and — when the verifier is root —
an unprivileged uid of its own. The run applies its barrier itself before anything of the submission
runs (`verifier_kernel`: Landlock and seccomp; `verifier_guard`: the audit hook). Runs of one batch are
released together (`verifier_zygote`); the verifier kills a run's session when its wall clock is up.

Stdlib only: copied verbatim into every task.
"""

from __future__ import annotations

import os
import secrets
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:
    from . import verifier_kernel as vkernel
    from . import verifier_results as vres
    from . import verifier_workspace as vws
    from .verifier_launch import BATCH_QUOTA_BYTES, RUN_QUOTA_BYTES, Launcher
    from .verifier_layout import NOBODY, PROBE_LOG, Layout, RunDirs, make_job, probe_job
except ImportError:  # run as a script from /tests: the modules are plain siblings
    import verifier_kernel as vkernel  # type: ignore[no-redef]
    import verifier_results as vres  # type: ignore[no-redef]
    import verifier_workspace as vws  # type: ignore[no-redef]
    from verifier_launch import BATCH_QUOTA_BYTES, RUN_QUOTA_BYTES, Launcher  # type: ignore[no-redef]
    from verifier_layout import NOBODY, PROBE_LOG, Layout, RunDirs, make_job, probe_job  # type: ignore[no-redef]

# World-writable places a run could leave something in when there is no Landlock to stop it.
SHARED_TMP_ROOTS = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/var/lock", "/dev/mqueue")
# What no run reads, whatever else it may (Landlock): the kernel's views of processes and devices, the
# shared temp dirs (other runs' leftovers), Harbor's logs (the agent's, earlier rewards) and oracle solution
# dirs, and the grading's own files (added per grading).
DENIED_ROOTS = ("/proc", "/sys", "/dev", "/run", "/tmp", "/var/tmp", "/logs", "/solution")

__all__ = ["NOBODY", "PROBE_LOG", "Layout", "Limits", "Run", "Runner", "make_job", "probe", "probe_job"]


@dataclass(frozen=True, slots=True)
class Limits:
    """Per-run resource limits."""

    timeout_sec: float
    memory_mb: int
    nproc: int = 128
    fsize_mb: int = 512
    case_timeout_sec: float | None = None


@dataclass(slots=True)
class Run:
    """One run: which variant, where, as whom."""

    name: str  # A, A′1 …, B′1 …, S1′1 …
    dirs: RunDirs
    owner: tuple[int, int] | None
    traced: bool = False  # it records coverage, which counts: A's, when the task has coverage targets


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


def readable_roots(layout: Layout, python: str, hidden: list[Path]) -> list[str]:
    """What every run may read (besides its own dirs): the system, minus `DENIED_ROOTS`, the scratch
    tree and the hidden grading paths; plus the interpreter's own trees wherever they are."""
    denied = [*DENIED_ROOTS, str(layout.base), *(str(h) for h in hidden)]
    extra = {os.path.dirname(os.path.dirname(os.path.abspath(python))),
             os.path.dirname(os.path.dirname(os.path.realpath(python))), str(layout.boot)}
    extra |= {p for p in (sys.prefix, sys.base_prefix, *sys.path) if p and os.path.isdir(p)}
    cfg = Path(os.path.realpath(python)).parent.parent / "pyvenv.cfg"
    if cfg.is_file():
        for line in cfg.read_text(encoding="utf-8", errors="replace").splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "home":
                extra.add(os.path.dirname(value.strip()))
    real_denied = [os.path.realpath(d) for d in denied]
    extra = {e for e in extra if not any(d == os.path.realpath(e) or d.startswith(os.path.realpath(e).rstrip("/") + "/")
                                         for d in real_denied) or os.path.realpath(e) == str(layout.boot)}
    return vkernel.readable_roots(denied, sorted(extra))


# --------------------------------------------------------------------------- leftovers

def processes_of(uids: set[int]) -> list[int]:
    """Pids of every process owned by one of `uids` (scanning /proc, not just a session)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid in uids:
                    found.append(int(entry))
            except OSError:
                continue
    return found


def kill_uids(uids: set[int]) -> int:
    """SIGKILL every process of the run uids; returns how many there were."""
    import signal

    pids = processes_of(uids)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    return len(pids)


def clean_shared_tmp(uids: set[int]) -> list[str]:
    """Remove what the run uids left in the world-writable places; returns the removed paths."""
    removed = []
    for root in SHARED_TMP_ROOTS:
        try:
            entries = list(os.scandir(root))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.stat(follow_symlinks=False).st_uid not in uids:
                    continue
                vws.remove_tree(Path(entry.path))
                removed.append(entry.path)
            except OSError:
                continue
    return removed


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
    """Runs the submission on prepared copies, a batch at a time."""

    layout: Layout
    launcher: Launcher
    limits: Limits
    import_roots: list[str]
    submission: str
    target_file: str
    protected: list[str]  # files any variant changes (relative), whose reading the guard refuses
    read_roots: list[str]
    nproc: int | None = None  # RLIMIT_NPROC, fixed at the first job so that every job is the same
    uids: set[int] = field(default_factory=set)
    cover_keys: dict[str, str] = field(default_factory=dict)  # run name → the key its coverage record is signed with
    plugins: tuple[str, ...] = ()  # the task image's pytest plugins (verifier_config), loaded with -p
    native: tuple[str, ...] = ()  # the copy's allowed extension modules (relative), mapped before the barrier
    expose: tuple[str, ...] = ()  # memory-primitive modules the target needs (verifier_native), mapped likewise

    def _limits(self, owner: tuple[int, int] | None) -> dict[str, int]:
        if self.nproc is None:
            self.nproc = self.limits.nproc
            if owner is None:  # RLIMIT_NPROC counts all of our uid's processes, not only this run's
                self.nproc += sum(1 for e in os.listdir("/proc") if e.isdigit())
        return {"AS": self.limits.memory_mb * 1024 * 1024, "NPROC": self.nproc,
                "FSIZE": self.limits.fsize_mb * 1024 * 1024, "CORE": 0, "CPU": int(self.limits.timeout_sec) + 5}

    def job(self, run: Run, log: str) -> dict[str, Any]:
        """What the run process does: the same for every variant but for its own paths."""
        dirs = run.dirs
        argv = [
            # Autoload is off (PYTEST_DISABLE_PLUGIN_AUTOLOAD): the plugins the suite needs are named, from
            # the config (the image's install), never found in the workspace; ours is registered last.
            self.submission, "-p", "no:cacheprovider", "-p", "no:randomly",
            *(arg for name in self.plugins for arg in ("-p", name)), "-p", "verifier_outcomes",
            "-q", "--no-header", "--tb=short", "-o", "addopts=", f"--rootdir={dirs.ws}",
            "-o", "python_files=test_*.py *_test.py", "-o", "python_classes=Test",
            "-o", "python_functions=test", "-o", "required_plugins=",
            # A plugin named like a module imported before it (pytest-socket is `-p socket`) draws pytest's
            # "already imported, cannot be rewritten" warning, which a repo's `filterwarnings = error` made
            # a crash of every run (urllib3). Only assertion messages depend on rewriting, never outcomes.
            "-W", "ignore::pytest.PytestAssertRewriteWarning",
        ]
        names = set()
        for rel in self.protected:
            names.add(rel.rsplit("/", 1)[-1])
            if rel.endswith(".py"):
                names.add(vbytecode_name(rel))
        guard = {"submission": str(dirs.ws / self.submission), "protected_names": sorted(names),
                 "protected_paths": sorted(str(dirs.ws / rel) for rel in self.protected),
                 "own_roots": [str(p) for p in dirs.writable()],
                 "modules": [[name, str(dirs.ws / rel)] for name, rel in module_names(self.protected, self.import_roots)
                             if (dirs.ws / rel).is_file()]}
        # Only A records the target's lines (signed with a key of its own): A is the one record read, and
        # a run can tell it is A without its recorder anyway (it runs alone and first: its pid, its start
        # time; docs/integrity.md, "Runs that talk to each other"), so a recorder in the other twelve
        # runs hid nothing and cost a third of their CPU on 3.11, where it is a trace function.
        if run.traced:
            guard["cover"] = {"target": str(dirs.ws / self.target_file), "key": self.cover_keys.setdefault(
                run.name, secrets.token_hex(32))}
        return make_job(self.layout, self.launcher.python, dirs, roots=self.import_roots, owner=run.owner,
                        limits=self._limits(run.owner), argv=argv, log=log, out=str(dirs.out), guard=guard,
                        landlock={"read": [*self.read_roots, str(dirs.ws)], "write": [str(p) for p in dirs.writable()]},
                        case_timeout=self.limits.case_timeout_sec,
                        native=[str(dirs.ws / rel) for rel in self.native], expose=list(self.expose))

    def run_batch(self, runs: list[Run]) -> list[vres.RunResult]:
        """Run `runs` together (released at once, in the order given: the caller shuffles it) and read
        what each produced. Log names are random: nothing a run can see is numbered by its place."""
        logs = [f"run-{secrets.token_hex(8)}.out" for _ in runs]
        self.uids |= {r.owner[0] for r in runs if r.owner is not None}
        jobs = [self.job(run, log) for run, log in zip(runs, logs)]
        launched = self.launcher.launch(jobs, logs=[self.layout.logs / log for log in logs],
                                        timeout=self.limits.timeout_sec)
        results = []
        for run, log, end in zip(runs, logs, launched):
            result = vres.RunResult(run.name, vres.Status.ok, round(end.seconds, 3), end.returncode,
                                    output_tail=_tail(self.layout.logs / log), leftover_processes=end.leftovers,
                                    via=end.via.value, cpu=end.cpu)
            if end.timed_out:
                result.status = vres.Status.timeout
            elif end.over_quota:  # a failing run, as a timeout is
                result.status = vres.Status.timeout
                result.output_tail = (f"killed: over the disk quota ({RUN_QUOTA_BYTES >> 20} MB a run, "
                                      f"{BATCH_QUOTA_BYTES >> 20} MB a batch)\n" + result.output_tail)
            else:
                vres.read_outcomes(result, run.dirs.out)
            vres.read_guard(result, run.dirs.out)
            if run.traced and not end.timed_out:
                result.covered = vres.read_covered(run.dirs.out, self.cover_keys[run.name])
            results.append(result)
        return results

    def end(self) -> None:
        """After the last batch: no process of a run uid survives, nothing they wrote stays shared."""
        if self.uids:
            kill_uids(self.uids)
            clean_shared_tmp(self.uids)


def vbytecode_name(rel: str) -> str:
    """The basename of `rel`'s bytecode as the import system names it (`name.<tag>.pyc`)."""
    import importlib.util

    return os.path.basename(importlib.util.cache_from_source(rel))


def module_names(files: list[str], import_roots: list[str]) -> list[tuple[str, str]]:
    """(dotted module name, file) for each Python file of `files` importable from one of `import_roots`
    (the deepest root that holds it; "" is the copy's top)."""
    found = []
    for rel in files:
        if not rel.endswith(".py"):
            continue
        roots = [r.strip("/") for r in import_roots if not r.strip("/") or rel.startswith(r.strip("/") + "/")]
        if not roots:
            continue
        root = max(roots, key=len)
        parts = (rel[len(root) + 1:] if root else rel)[:-3].split("/")
        if parts[-1] == "__init__":
            parts.pop()
        if parts and all(p.isidentifier() for p in parts):
            found.append((".".join(parts), rel))
    return found

"""One isolated pytest run of the submission on a prepared copy: environment, limits, uid, results.

Each run: a fresh empty HOME and TMPDIR, a from-scratch environment (no inherited PYTHONPATH, no
secrets), pytest with plugin autoloading off, a wall-clock timeout that kills the whole process group
(and anything left in its session), rlimits on memory, processes, file size and core dumps, and — when
the verifier is root — an unprivileged uid/gid, so tests cannot write the reward, site-packages or
`/tests`, and cannot read the hidden workspace or grading files. What a run produced is read by
`verifier_results` (JUnit XML outcomes; line coverage on the A run only).

Runs are sequential on purpose: every variant must run at the same absolute path, and state a test
leaves in the shared temp folders is removed between runs.

Stdlib only: copied verbatim into every task.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

try:
    from . import verifier_workspace as vws
    from .verifier_results import RunResult, Status, covered_lines, parse_junit
except ImportError:  # run as a script from /tests: the modules are plain siblings
    import verifier_workspace as vws  # type: ignore[no-redef]
    from verifier_results import RunResult, Status, covered_lines, parse_junit  # type: ignore[no-redef]

NOBODY = 65534
# World-writable places a test (as the run uid) could leave a marker for a later run.
SHARED_TMP_ROOTS = ("/tmp", "/var/tmp", "/dev/shm")


# Executed as `python -I -S -c LAUNCHER <limits> <argv…>`: set rlimits, then exec the real command.
# A separate launcher instead of preexec_fn, which is unsafe when the caller has threads.
LAUNCHER = """
import os, resource, sys
for item in sys.argv[1].split(","):
    name, value = item.split("=")
    key = getattr(resource, "RLIMIT_" + name)
    value = int(value)
    soft, hard = resource.getrlimit(key)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(key, (value, value))
os.execv(sys.argv[2], sys.argv[2:])
"""

# Shadows any sitecustomize further down sys.path (an agent could plant one in the workspace, which an
# editable install puts on sys.path): drop workspace paths and editable-install finders, seed `random`.
SITECUSTOMIZE = '''"""Written by the repo2rlenv verifier for test runs: hide the workspace, seed random."""
import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(_here, "hidden_paths.txt"), encoding="utf-8") as _fh:
    _hidden = [line.strip() for line in _fh if line.strip()]


def _is_hidden(path):
    for candidate in {os.path.abspath(path), os.path.realpath(path)}:
        for root in _hidden:
            if candidate == root or candidate.startswith(root.rstrip(os.sep) + os.sep):
                return True
    return False


sys.path[:] = [p for p in sys.path if not (p and _is_hidden(p))]
sys.meta_path[:] = [f for f in sys.meta_path
                    if not str(getattr(f, "__module__", type(f).__module__)).startswith("__editable__")]
sys.path_hooks[:] = [h for h in sys.path_hooks
                     if not str(getattr(h, "__module__", "")).startswith("__editable__")]
sys.path_importer_cache.clear()

import random  # noqa: E402

random.seed(0)
'''


# Can the run uid use this interpreter's pytest and coverage? Finding and opening the modules answers that
# in a few milliseconds; importing pytest would take a few hundred.
PROBE = """
import importlib.util
for name in ("pytest", "_pytest", "pluggy", "coverage"):
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        raise SystemExit(f"no module named {name}")
    open(spec.origin, "rb").close()
"""


@dataclass(frozen=True, slots=True)
class Limits:
    """Per-run resource limits."""

    timeout_sec: float
    memory_mb: int
    nproc: int = 128
    fsize_mb: int = 512


@dataclass(frozen=True, slots=True)
class Layout:
    """The verifier's scratch tree; `ws` is the one path every variant runs at."""

    base: Path
    stage: Path  # staged A, root-only
    ws: Path
    home: Path
    tmp: Path
    out: Path  # JUnit XML and coverage data (written by the run uid)
    boot: Path  # sitecustomize + coverage rc (read-only for the run uid)
    logs: Path  # captured output, root-only

    @classmethod
    def create(cls, base: Path) -> "Layout":
        layout = cls(base, base / "stage", base / "ws", base / "home", base / "tmp", base / "out",
                     base / "boot", base / "runlogs")
        os.chmod(base, 0o711)  # the run uid may traverse to ws/home/tmp/out/boot but not list base
        for private in (layout.stage, layout.logs):
            private.mkdir(mode=0o700)
        layout.boot.mkdir(mode=0o755)
        return layout


# --------------------------------------------------------------------------- processes and leftovers

def _session_members(sid: int) -> dict[int, str]:
    """{pid: state} of every process in the run's process group or session."""
    members = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            raw = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = raw.rsplit(")", 1)[-1].split()
        if len(fields) > 3 and sid in (int(fields[2]), int(fields[3])):
            members[int(entry)] = fields[0]
    return members


def end_session(sid: int, grace: float = 3.0) -> int:
    """SIGKILL what is left of a run (its process group and session), reap what we can, and wait until it is
    gone: dying or zombie processes still count against RLIMIT_NPROC and show in /proc, so a later run could
    read them as state. Returns how many remained after `grace` seconds (zombies a non-reaping init holds)."""
    try:
        os.killpg(sid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    deadline = time.monotonic() + grace
    while True:
        members = _session_members(sid)
        for pid, state in members.items():
            if state != "Z":
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            try:  # ours to reap when we are their parent or, as a child subreaper, inherited them
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
        if not members or time.monotonic() > deadline:
            return len(members)
        time.sleep(0.02)


def become_subreaper() -> bool:
    """Make this process the reaper of orphaned descendants (Linux prctl), so a fork bomb's leftovers are
    reaped here even when the container's init never reaps. Only for the verifier run as a script: a host
    process calling `score()` keeps its own semantics."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


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
    python: str
    limits: Limits
    import_roots: list[str]
    submission: str
    target_file: str
    owner: tuple[int, int] | None  # (uid, gid) to drop to; None: run as ourselves
    tmp_snapshot: dict[str, set[str]] = field(default_factory=dict)
    leftovers: int = 0  # processes of the last run still present after it was ended

    def env(self) -> dict[str, str]:
        roots = [str(self.layout.ws / r) if r else str(self.layout.ws) for r in self.import_roots]
        return {
            "PATH": os.pathsep.join([os.path.dirname(self.python), "/usr/local/bin", "/usr/bin", "/bin"]),
            "HOME": str(self.layout.home),
            "TMPDIR": str(self.layout.tmp),
            "LANG": "C.UTF-8",
            "PYTHONPATH": os.pathsep.join([str(self.layout.boot), *roots]),
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONHASHSEED": "0",
            "PYTHONNOUSERSITE": "1",
            "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        }

    def write_boot(self, hidden: list[Path]) -> None:
        boot = self.layout.boot
        (boot / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
        (boot / "hidden_paths.txt").write_text("".join(f"{os.path.abspath(p)}\n" for p in hidden), encoding="utf-8")
        (boot / "coveragerc").write_text(
            "[run]\n"
            f"data_file = {self.layout.out / '.coverage'}\n"
            f"include = {self.layout.ws / self.target_file}\n"
            "disable_warnings = no-data-collected, module-not-measured, module-not-imported\n",
            encoding="utf-8")
        for path in boot.iterdir():
            os.chmod(path, 0o644)

    def _limit_spec(self) -> str:
        nproc = self.limits.nproc
        if self.owner is None:  # RLIMIT_NPROC counts all of our uid's processes, not only this run's
            nproc += sum(1 for e in os.listdir("/proc") if e.isdigit())
        return ",".join([f"AS={self.limits.memory_mb * 1024 * 1024}", f"NPROC={nproc}",
                         f"FSIZE={self.limits.fsize_mb * 1024 * 1024}", "CORE=0",
                         f"CPU={int(self.limits.timeout_sec) + 5}"])

    def _spawn(self, argv: list[str], log: Path, timeout: float) -> tuple[int | None, bool, float]:
        """Run argv under limits and the run uid; (returncode, timed_out, seconds)."""
        launcher = [self.python, "-I", "-S", "-c", LAUNCHER, self._limit_spec(), *argv]
        kwargs: dict[str, object] = {}
        if self.owner is not None:
            kwargs = {"user": self.owner[0], "group": self.owner[1], "extra_groups": []}
        start = time.monotonic()
        with open(log, "wb") as out:
            proc = subprocess.Popen(launcher, cwd=self.layout.ws, env=self.env(), stdin=subprocess.DEVNULL,
                                    stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                    **kwargs)  # type: ignore[arg-type]
            timed_out = False
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
            finally:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
                proc.wait()
                self.leftovers = end_session(proc.pid)
        return (None if timed_out else proc.returncode), timed_out, time.monotonic() - start

    def probe(self) -> str | None:
        """None when the run uid can use the interpreter with pytest and coverage; else why not."""
        for path in (self.layout.home, self.layout.tmp, self.layout.out):
            _fresh_dir(path, self.owner)
        self.layout.ws.mkdir(exist_ok=True)
        log = self.layout.logs / "probe.out"
        try:
            rc, timed_out, _ = self._spawn([self.python, "-c", PROBE], log, 60)
        except OSError as exc:  # e.g. the run uid cannot reach the scratch dir or the interpreter
            return f"{type(exc).__name__}: {exc}"
        if rc == 0:
            return None
        lines = _tail(log).strip().splitlines()
        return "timeout" if timed_out else (lines[-1] if lines else f"exit code {rc}")

    def run(self, variant: str, *, coverage: bool) -> RunResult:
        """Run the submission on the copy currently at `layout.ws`."""
        for path in (self.layout.home, self.layout.tmp, self.layout.out):
            _fresh_dir(path, self.owner)
        junit = self.layout.out / "junit.xml"
        pytest_args = [
            self.submission, "-p", "no:cacheprovider", "-p", "no:randomly", f"--junitxml={junit}",
            "-q", "--no-header", "--tb=short", "-o", "addopts=", f"--rootdir={self.layout.ws}",
            "-o", "python_files=test_*.py *_test.py", "-o", "python_classes=Test",
            "-o", "python_functions=test", "-o", "junit_family=xunit2", "-o", "junit_logging=no",
            "-o", "required_plugins=",  # plugins are never autoloaded here: a requirement would abort every run
        ]
        if coverage:
            argv = [self.python, "-m", "coverage", "run", f"--rcfile={self.layout.boot / 'coveragerc'}",
                    "-m", "pytest", *pytest_args]
        else:
            argv = [self.python, "-m", "pytest", *pytest_args]
        log = self.layout.logs / f"{variant}.out"
        rc, timed_out, seconds = self._spawn(argv, log, self.limits.timeout_sec)
        if self.owner is not None:
            clean_shared_tmp(self.owner[0], self.tmp_snapshot)
        result = RunResult(variant, Status.ok, round(seconds, 3), rc, output_tail=_tail(log),
                           leftover_processes=self.leftovers)
        parsed = None if timed_out else parse_junit(junit)
        if timed_out:
            result.status = Status.timeout
        elif parsed is None:
            result.status = Status.crashed
        else:
            result.cases, collection_failed = parsed
            if collection_failed:
                result.status = Status.collection_error
        if coverage and not timed_out:
            try:
                result.covered = covered_lines(self.layout.out / ".coverage", self.layout.ws / self.target_file,
                                               self.layout.logs)
            except Exception:  # a corrupt data file (the run uid could write it) just means nothing covered
                result.covered = []
        return result

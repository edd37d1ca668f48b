"""The verifier's scratch tree and the start of the run processes: the first thing grading does.

The warm zygote (`verifier_launch`) takes longer to start than anything else the verifier does before
the first run (it imports pytest), so `Scratch.open` starts it first: before the config,
the diffs or the submission are read, and before the verifier imports the rest of itself. This module
therefore imports only what that needs; `verifier_run` holds the runs themselves.

Stdlib only: copied verbatim into every task.
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

try:
    from .verifier_launch import Launcher
except ImportError:  # run as a script from /tests: the modules are plain siblings
    from verifier_launch import Launcher  # type: ignore[no-redef]

NOBODY = 65534


def run_owner() -> tuple[int, int] | None:
    """The uid/gid the probe checks, when we are root: nobody's. It stands for every run's uid (`run_owners`:
    none of them has a group or a file of its own, so what nobody can read, they can); none when we are
    not root (the runs run as us)."""
    return (NOBODY, NOBODY) if os.geteuid() == 0 else None


RUN_UIDS = range(40000, 60000)  # no system account, no user of a Debian image, lives there


def run_owners(count: int, rng: random.Random) -> list[tuple[int, int] | None]:
    """Distinct (uid, gid) for `count` runs when we are root (none to drop to otherwise), each unused by any
    process now: runs that share nothing of their uid cannot signal or read each other whatever Landlock
    does, and killing every process of a run's uid afterwards kills nothing but what that run left."""
    if os.geteuid() != 0:
        return [None] * count
    busy = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                busy.add(os.stat(f"/proc/{entry}").st_uid)
            except OSError:
                continue
    ids = rng.sample([u for u in RUN_UIDS if u not in busy], count)
    return [(i, i) for i in ids]

PROBE_LOG = "probe.out"

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



# The boot dir's modules: the run processes import them from there (`verifier_zygote`).
BOOT_MODULES = ("verifier_guard.py", "verifier_kernel.py", "verifier_native.py", "verifier_outcomes.py")
HERE = Path(__file__).resolve().parent
_NAME_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789"


@dataclass(frozen=True, slots=True)
class RunDirs:
    """One run's own directories, under a random name: its copy (the cwd), HOME, TMPDIR and output."""

    root: Path
    ws: Path
    home: Path
    tmp: Path
    out: Path

    def writable(self) -> list[Path]:
        return [self.ws, self.home, self.tmp, self.out]


@dataclass(frozen=True, slots=True)
class Layout:
    """The verifier's scratch tree. Every run has its own dirs at `base/<random>/`; the names have one
    length, so a path tells a run nothing but that it is not another run's."""

    base: Path
    stage: Path  # staged A, root-only
    boot: Path  # sitecustomize, hidden paths, the run-side modules (read-only for the run uids)
    logs: Path  # captured output, root-only

    @classmethod
    def create(cls, base: Path) -> "Layout":
        layout = cls(base, base / "stage", base / "boot", base / "runlogs")
        os.chmod(base, 0o711)  # the run uids may traverse to their own dirs and boot but not list base
        for private in (layout.stage, layout.logs):
            private.mkdir(mode=0o700)
        layout.boot.mkdir()
        os.chmod(layout.boot, 0o755)
        return layout

    def write_boot(self, hidden: list[Path]) -> None:
        """The boot dir the zygote starts with: it is first on every run's PYTHONPATH."""
        (self.boot / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
        (self.boot / "hidden_paths.txt").write_text("".join(f"{os.path.abspath(p)}\n" for p in hidden),
                                                    encoding="utf-8")
        for name in BOOT_MODULES:
            shutil.copyfile(HERE / name, self.boot / name)
        for path in self.boot.iterdir():
            os.chmod(path, 0o644)

    def new_run(self, rng: "random.Random", owner: tuple[int, int] | None) -> RunDirs:
        """Fresh dirs for one run, owned by `owner` (its copy is filled in by the copy builder)."""
        while True:
            root = self.base / "".join(rng.choice(_NAME_CHARS) for _ in range(16))
            if not root.exists():
                break
        root.mkdir(mode=0o711)
        dirs = RunDirs(root, root / "ws", root / "home", root / "tmp", root / "out")
        for path in (dirs.home, dirs.tmp, dirs.out):
            path.mkdir(mode=0o700)
            if owner is not None:
                os.chown(path, *owner)
        return dirs

    def env(self, python: str, run: RunDirs | None, roots: list[str]) -> dict[str, str]:
        """A run's whole environment (the zygote's own has no run: it starts with `run=None`)."""
        paths = [] if run is None else [str(run.ws / r) if r else str(run.ws) for r in roots]
        return {
            "PATH": os.pathsep.join([os.path.dirname(python), "/usr/local/bin", "/usr/bin", "/bin"]),
            "HOME": str(run.home) if run else str(self.boot),
            "TMPDIR": str(run.tmp) if run else str(self.boot),
            "LANG": "C.UTF-8",
            "USER": "nobody",
            "LOGNAME": "nobody",
            "PYTHONPATH": os.pathsep.join([str(self.boot), *paths]),
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONHASHSEED": "0",
            "PYTHONNOUSERSITE": "1",
            "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        }


def make_job(layout: Layout, python: str, run: RunDirs | None, *, roots: list[str], owner: tuple[int, int] | None,
             limits: dict[str, int], argv: list[str], log: str, **extra: Any) -> dict[str, Any]:
    """What a run process does (see `verifier_zygote`); `extra` adds the run-only keys."""
    env = layout.env(python, run, roots)
    cwd = run.ws if run is not None else layout.boot
    head = [str(cwd)]
    for entry in env["PYTHONPATH"].split(os.pathsep):  # the interpreter drops repeated PYTHONPATH entries
        if entry not in head[1:]:
            head.append(entry)
    return {"cwd": str(cwd), "env": env, "path_head": head, "argv": argv, "limits": limits, "boot": str(layout.boot),
            "owner": None if owner is None else list(owner), "log": str(layout.logs / log), **extra}


def probe_job(layout: Layout, python: str, owner: tuple[int, int]) -> dict[str, Any]:
    """Can `owner` use the interpreter with pytest?"""
    return make_job(layout, python, None, roots=[], owner=owner, limits={}, argv=[], log=PROBE_LOG)


def start_launcher(layout: Layout, python: str, *, zygote: bool = True,
                   probe_owner: tuple[int, int] | None = None) -> Launcher:
    """The run processes' launcher, its zygote already warming up (before any grading material is read)
    and, given `probe_owner`, probing that uid meanwhile."""
    launcher = Launcher(python, layout.boot, layout.env(python, None, []), layout.logs)
    if zygote:
        launcher.start_zygote(None if probe_owner is None else probe_job(layout, python, probe_owner))
    else:
        launcher.note = "zygote switched off"
    return launcher


@dataclass(slots=True)
class Scratch:
    """The verifier's temp dir, its layout and the launcher (its zygote already warming up)."""

    tmp: str
    layout: Layout
    launcher: Launcher
    workspace: Path  # resolved
    tests_dir: Path  # resolved

    @property
    def hidden(self) -> list[Path]:
        """What no run may read: the workspace (A's other copy) and the tests dir (B, the config)."""
        return [self.workspace, self.tests_dir]

    @classmethod
    def open(cls, workspace: Path, tests_dir: Path, python: str, *, zygote: bool = True) -> "Scratch":
        """Make the scratch tree and start the zygote (with `zygote=False`, runs go through subprocesses)."""
        hidden = [Path(workspace).resolve(), Path(tests_dir).resolve()]
        parent = Path(tempfile.gettempdir()).resolve()
        if any(parent.is_relative_to(h) for h in hidden):
            parent = Path("/tmp")
        tmp = tempfile.mkdtemp(prefix="r2e-verify-", dir=parent)
        try:
            layout = Layout.create(Path(tmp))
            layout.write_boot(hidden)
            launcher = start_launcher(layout, python, zygote=zygote, probe_owner=run_owner())
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return cls(tmp, layout, launcher, *hidden)

    def reset(self) -> None:
        """Between two gradings of a batch: the stage and every run's dirs and logs go (root removes what
        the run uids made, whatever its modes); the zygote, the boot dir and the zygote's logs stay."""
        keep = {self.layout.boot, self.layout.logs}
        for entry in os.scandir(self.layout.base):
            if Path(entry.path) not in keep:
                shutil.rmtree(entry.path, ignore_errors=True)
        for entry in os.scandir(self.layout.logs):
            if entry.name.startswith("run-"):
                os.unlink(entry.path)
        leftovers = [e.name for e in os.scandir(self.layout.base) if Path(e.path) not in keep]
        if leftovers:
            raise RuntimeError(f"the last grading's dirs could not be removed: {leftovers}")
        self.layout.stage.mkdir(mode=0o700)

    def close(self, *, detach: bool = False) -> None:
        """Stop the zygote and remove the temp dir; with `detach`, the removal (tens of ms for a few copies
        of a big repository) runs in a process of its own that outlives this one."""
        try:
            self.launcher.close()
        finally:
            if not detach:
                shutil.rmtree(self.tmp, ignore_errors=True)
            elif os.fork() == 0:
                self._remove_detached()

    def _remove_detached(self) -> None:
        """The forked remover: nothing of the grading's output, a session of its own; never returns."""
        try:
            os.setsid()
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            shutil.rmtree(self.tmp, ignore_errors=True)
        finally:
            os._exit(0)

"""The verifier's scratch tree and the start of the run processes: the first thing grading does.

The warm zygote (`verifier_launch`) takes longer to start than anything else the verifier does before
the first run (it imports pytest), so `Scratch.open` starts it first: before the config,
the diffs or the submission are read, and before the verifier imports the rest of itself. This module
therefore imports only what that needs; `verifier_run` holds the runs themselves.

Stdlib only: copied verbatim into every task.
"""

from __future__ import annotations

import os
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
    """The uid/gid runs drop to when the probe lets them: nobody's when we are root, else none (run as us)."""
    return (NOBODY, NOBODY) if os.geteuid() == 0 else None

# The run's output: one name for every variant (a test can read where its stdout goes).
RUN_LOG = "run.out"
PROBE_LOG = "probe.out"
# Written into the boot dir for the A run only: the file coverage measures.
COVERAGE_REQUEST = "coverage_request.json"
COVERED_FILE = "covered.json"

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



@dataclass(frozen=True, slots=True)
class Layout:
    """The verifier's scratch tree; `ws` is the one path every variant runs at."""

    base: Path
    stage: Path  # staged A, root-only
    ws: Path
    home: Path
    tmp: Path
    out: Path  # JUnit XML and covered lines (written by the run uid)
    boot: Path  # sitecustomize, hidden paths, the coverage request (read-only for the run uid)
    logs: Path  # captured output, root-only
    spare: Path  # the next copy while it is built, and used copies; root-only

    @classmethod
    def create(cls, base: Path) -> "Layout":
        layout = cls(base, base / "stage", base / "ws", base / "home", base / "tmp", base / "out",
                     base / "boot", base / "runlogs", base / "spare")
        os.chmod(base, 0o711)  # the run uid may traverse to ws/home/tmp/out/boot but not list base
        for private in (layout.stage, layout.logs, layout.spare):
            private.mkdir(mode=0o700)
        for public in (layout.boot, layout.ws):
            public.mkdir()
            os.chmod(public, 0o755)
        return layout

    def write_boot(self, hidden: list[Path]) -> None:
        """The boot dir the zygote starts with: it is first on every run's PYTHONPATH."""
        (self.boot / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
        (self.boot / "hidden_paths.txt").write_text("".join(f"{os.path.abspath(p)}\n" for p in hidden),
                                                    encoding="utf-8")
        for path in self.boot.iterdir():
            os.chmod(path, 0o644)
        for path in (self.home, self.tmp, self.out):  # so nothing caches a missing TMPDIR; fresh per run
            path.mkdir(mode=0o700)

    def env(self, python: str, roots: list[str]) -> dict[str, str]:
        """A run's whole environment; the zygote starts with `roots=[]`, each child adds the import roots."""
        paths = [str(self.ws / r) if r else str(self.ws) for r in roots]
        return {
            "PATH": os.pathsep.join([os.path.dirname(python), "/usr/local/bin", "/usr/bin", "/bin"]),
            "HOME": str(self.home),
            "TMPDIR": str(self.tmp),
            "LANG": "C.UTF-8",
            "PYTHONPATH": os.pathsep.join([str(self.boot), *paths]),
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONHASHSEED": "0",
            "PYTHONNOUSERSITE": "1",
            "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        }


def make_job(layout: Layout, python: str, *, roots: list[str], owner: tuple[int, int] | None,
             limits: dict[str, int], argv: list[str], log: str) -> dict[str, Any]:
    """What a run process does (see `verifier_zygote`)."""
    env = layout.env(python, roots)
    head = [str(layout.ws)]
    for entry in env["PYTHONPATH"].split(os.pathsep):  # the interpreter drops repeated PYTHONPATH entries
        if entry not in head[1:]:
            head.append(entry)
    return {
        "cwd": str(layout.ws), "env": env, "path_head": head, "argv": argv, "limits": limits,
        "owner": None if owner is None else list(owner), "log": str(layout.logs / log),
        "covered": str(layout.out / COVERED_FILE), "coverage_request": str(layout.boot / COVERAGE_REQUEST),
    }


def probe_job(layout: Layout, python: str, owner: tuple[int, int]) -> dict[str, Any]:
    """Can `owner` use the interpreter with pytest and coverage, from the copy's directory?"""
    return make_job(layout, python, roots=[], owner=owner, limits={}, argv=[], log=PROBE_LOG)


def start_launcher(layout: Layout, python: str, *, zygote: bool = True,
                   probe_owner: tuple[int, int] | None = None) -> Launcher:
    """The run processes' launcher, its zygote already warming up (before any grading material is read)
    and, given `probe_owner`, probing that uid meanwhile."""
    launcher = Launcher(python, layout.boot, layout.env(python, []), layout.logs)
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

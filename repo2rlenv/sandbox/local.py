"""The local fallback sandbox: a venv per repo snapshot and a temp work dir per session.

It also builds environments keyed by dependency spec (`sandbox/environments.py`): a venv per key, built
from the first tree with that key; a session of it works on a copy of its own tree.

Isolation is process-level only: each command runs in its own process group (killed as a whole on
timeout), with rlimits, a from-scratch environment (no host secrets), and — when `unshare` can create a
network namespace (root on Linux) — no network. Say so loudly: this is not a security boundary.
"""

from __future__ import annotations

import hashlib
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Mapping

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from repo2rlenv.digest import tree_digest
from repo2rlenv.discovery.python import BASE_IMAGES
from repo2rlenv.errors import SandboxError
from repo2rlenv.sandbox.base import ExecResult, Limits, base_env, build_failure, scrub_env
from repo2rlenv.sandbox import kernel_ext
from repo2rlenv.sandbox.install import InstallPlan, install_steps, plan_install

WARNING = ("local sandbox: isolation is process-level only (own process group, rlimits, scrubbed "
           "environment); use --sandbox docker for untrusted repositories")


def _unshare_works() -> bool:
    """Whether `unshare --net` can give commands an empty network namespace here."""
    exe = shutil.which("unshare")
    if not exe:
        return False
    try:
        return subprocess.run([exe, "--net", "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def _limit_preexec(limits: Limits):
    def apply() -> None:
        mem = limits.memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        try:
            resource.setrlimit(resource.RLIMIT_NPROC, (limits.pids, limits.pids))
        except (ValueError, OSError):
            pass

    return apply


def run_limited(argv: list[str], *, cwd: str, env: Mapping[str, str], limits: Limits,
                timeout: float, net_isolated: bool) -> ExecResult:
    """Run argv in its own process group with rlimits; kill the whole group on timeout."""
    full = (["unshare", "--net", "--"] if net_isolated else []) + list(argv)
    start = time.monotonic()
    proc = subprocess.Popen(full, cwd=cwd, env=dict(env), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=_limit_preexec(limits))
    timed_out = False
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = proc.communicate()
    finally:
        # Children that left the group's leader behind still belong to the group: kill them too.
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    return ExecResult(argv=list(argv), exit_code=proc.returncode if not timed_out else 124,
                      stdout=out.decode("utf-8", "replace"), stderr=err.decode("utf-8", "replace"),
                      timed_out=timed_out, duration_sec=time.monotonic() - start)


class LocalSession:
    """A temp copy of the repo snapshot and the prepared venv."""

    def __init__(self, repo_dir: Path, venv: Path, limits: Limits, net_isolated: bool):
        self._root = Path(tempfile.mkdtemp(prefix="r2e-local-"))
        self.workspace = str(self._root / "workspace")
        shutil.copytree(repo_dir, self.workspace, symlinks=True)
        (self._root / "home").mkdir()
        (self._root / "tmp").mkdir()
        self.python = str(venv / "bin" / "python")
        self._venv = venv
        self._limits = limits
        self._net = net_isolated

    def _host_path(self, path: str) -> Path:
        # Paths inside a local session are host paths; the sandbox's /tmp maps to the session's tmp dir.
        return Path(path)

    def exec(self, argv: list[str], *, cwd: str | None = None, env: Mapping[str, str] | None = None,
             timeout: float | None = None) -> ExecResult:
        full_env = base_env(str(self._root / "home"), str(self._root / "tmp"),
                            f"{self._venv / 'bin'}:/usr/local/bin:/usr/bin:/bin")
        full_env.update(scrub_env(env))
        return run_limited(argv, cwd=cwd or self.workspace, env=full_env, limits=self._limits,
                           timeout=timeout or self._limits.timeout_sec, net_isolated=self._net)

    def write_files(self, files: Mapping[str, bytes | str]) -> None:
        for path, data in files.items():
            target = self._host_path(path)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data.encode() if isinstance(data, str) else data)

    def read_file(self, path: str) -> bytes | None:
        target = self._host_path(path)
        return target.read_bytes() if target.is_file() else None

    @property
    def scratch(self) -> str:
        return str(self._root / "tmp")

    def close(self) -> None:
        shutil.rmtree(self._root, ignore_errors=True)

    def __enter__(self) -> "LocalSession":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class LocalSandbox:
    """Runs a repo's code in a venv on the host, one process group per command."""

    name = "local"
    isolation = "process"

    def __init__(self, *, limits: Limits, cache_dir: Path, python: str | None = None,
                 version_hint: str | None = None):
        self.limits = limits
        self.cache_dir = cache_dir
        self.python = python or sys.executable
        self._python_fixed = python is not None
        # The version of the ref's latest tag, told to VCS build backends (discovery/version.py).
        self.version_hint = version_hint
        self.network_isolated = _unshare_works()
        self.plan: InstallPlan | None = None
        self._repo_dir: Path | None = None
        self._venv: Path | None = None

    def prepare(self, repo_dir: Path) -> None:
        self.plan = plan_install(repo_dir, version_hint=self.version_hint)
        python = self.interpreter(self.plan)
        key = hashlib.sha256((tree_digest(repo_dir) + python + self.plan.environment_inputs()).encode()).hexdigest()[:16]
        self._venv = self._build_venv(self.cache_dir / "local-sandboxes" / key, repo_dir, self.plan)
        self._repo_dir = repo_dir

    def _build_venv(self, home: Path, repo_dir: Path, plan: InstallPlan) -> Path:
        """The venv at `home` with `repo_dir` installed by `plan` (built once; `.ready` marks it done)."""
        venv, source = home / "venv", home / "src"
        if not (home / ".ready").exists():
            shutil.rmtree(home, ignore_errors=True)
            home.mkdir(parents=True)
            # The editable install points at this permanent copy; sessions work on copies of it and put
            # their own import root first on sys.path.
            shutil.copytree(repo_dir, source, symlinks=True)
            steps = [[self.interpreter(plan), "-m", "venv", str(venv)]]
            steps += install_steps(plan, str(venv / "bin" / "python"))
            env = {k: v for k, v in os.environ.items() if k.startswith(("PIP_", "HTTP", "HTTPS", "NO_PROXY", "SSL_", "REQUESTS_")) or k in ("PATH", "HOME")}
            env.update(plan.build_env)  # pretend versions: this build only, never a session's environment
            for step in steps:
                proc = subprocess.run(step, cwd=source, env=env, capture_output=True, text=True)
                if proc.returncode != 0:
                    raise build_failure(f"preparing the local venv failed at `{' '.join(step[-3:])}`",
                                        (proc.stdout or "") + (proc.stderr or ""))
            (home / ".ready").write_text("ok\n")
        self._kernel_ext(home, venv)
        return venv

    @staticmethod
    def _kernel_ext(home: Path, venv: Path) -> None:
        """The verifier's kernel extension in the venv, as the base images carry it, rebuilt when its source
        changed since (a venv kept from an older checkout would grade with Python's audit hook). Without a
        compiler the graded runs confine themselves through ctypes, and their reward details say so."""
        marker, stamp = home / ".kernel-ext", kernel_ext.source_stamp()
        if marker.exists() and marker.read_text() == stamp:
            return
        built, why = kernel_ext.try_build(str(venv / "bin" / "python"))
        if built is None:
            print(f"local sandbox: the verifier's kernel extension was not built ({why}); graded runs "
                  "fall back to ctypes", file=sys.stderr)
            return
        marker.write_text(stamp)

    def interpreter(self, plan: InstallPlan) -> str:
        """The host Python for `plan`: this one, unless the plan's requires-python picked a newer base
        image and a `pythonX.Y` of that version is on PATH (a --python given explicitly always wins)."""
        if self._python_fixed or plan.requires_python is None:
            return self.python
        try:
            spec = SpecifierSet(plan.requires_python)
        except InvalidSpecifier:
            return self.python
        here = ".".join(map(str, sys.version_info[:3]))
        if spec.contains(here, prereleases=True):
            return self.python
        for image in BASE_IMAGES:
            short = ".".join(image.python.split(".")[:2])
            if spec.contains(image.python, prereleases=True) and (found := shutil.which(f"python{short}")):
                return found
        raise SandboxError(f"the repo needs Python {plan.requires_python} ({plan.python_reason}) and the local "
                           f"sandbox runs {here}; install a matching python3.X or use --sandbox docker")

    @property
    def venv_python(self) -> str:
        if self._venv is None:
            raise SandboxError("LocalSandbox.venv_python before prepare()")
        return str(self._venv / "bin" / "python")

    def open(self) -> LocalSession:
        if self._repo_dir is None or self._venv is None:
            raise SandboxError("LocalSandbox.open() before prepare()")
        return LocalSession(self._repo_dir, self._venv, self.limits, self.network_isolated)

    # --- environments keyed by dependency spec (sandbox/environments.py) --------------------------

    def plan_environment(self, tree_dir: Path) -> InstallPlan:
        from repo2rlenv.sandbox.environments import environment_plan

        return environment_plan(tree_dir, version_hint=self.version_hint)

    def environment_salt(self, plan: InstallPlan) -> str:
        return self.interpreter(plan) + plan.environment_inputs()

    def build_environment(self, key: str, tree_dir: Path, plan: InstallPlan) -> str:
        return str(self._build_venv(self.cache_dir / "local-envs" / key, tree_dir, plan))

    def open_environment(self, handle: str, tree_dir: Path) -> LocalSession:
        return LocalSession(tree_dir, Path(handle), self.limits, self.network_isolated)

"""A Harbor environment seen as a sandbox `Session`, so the solver loop runs unchanged inside a Harbor trial.

Harbor's environments are async (`await environment.exec(command)`, a `bash -c` in the container); the
loop is sync and runs in a worker thread (`asyncio.to_thread`). Each call here schedules the coroutine on
Harbor's event loop and waits for it. Commands run under coreutils `timeout -k`, like the Docker
sandbox's, with an environment built from scratch; files travel base64-encoded through heredocs, in
chunks well below the kernel's limit on one argument (128 KiB).

No harbor import: the environment is duck-typed, so this module also loads outside Harbor's venv.
"""

from __future__ import annotations

import asyncio
import base64
import posixpath
import shlex
import time
from collections.abc import Mapping
from typing import Any

from repo2rlenv.sandbox.base import ExecResult, base_env, scrub_env

WORKSPACE = "/workspace"
VENV_PYTHON = "/opt/venv/bin/python"
CHUNK_B64 = 60_000
# Past the in-container `timeout`, how long to wait for Harbor's exec before giving up on it.
_GRACE_SEC = 30


class HarborSession:
    """The `Session` protocol over a Harbor `BaseEnvironment`; call its methods from a worker thread."""

    workspace = WORKSPACE
    python = VENV_PYTHON
    scratch = "/tmp/r2e-solver"

    def __init__(self, environment: Any, loop: asyncio.AbstractEventLoop, *, default_timeout: float = 900.0):
        self._env = environment
        self._loop = loop
        self._default_timeout = default_timeout
        self._home = posixpath.join(self.scratch, "home")

    async def prepare(self) -> None:
        """Make the scratch and home dirs (call on Harbor's loop, before the loop thread starts)."""
        await self._env.exec(f"mkdir -p {shlex.quote(self._home)}", timeout_sec=60)

    def _run(self, command: str, *, cwd: str | None, env: Mapping[str, str] | None, timeout: float) -> Any:
        future = asyncio.run_coroutine_threadsafe(
            self._env.exec(command, cwd=cwd, env=dict(env) if env else None, timeout_sec=int(timeout) + _GRACE_SEC),
            self._loop)
        return future.result(timeout + 2 * _GRACE_SEC)

    def exec(self, argv: list[str], *, cwd: str | None = None, env: Mapping[str, str] | None = None,
             timeout: float | None = None) -> ExecResult:
        timeout = timeout or self._default_timeout
        full_env = base_env(self._home, "/tmp", "/opt/venv/bin:/usr/local/bin:/usr/bin:/bin")
        full_env.update(scrub_env(env))
        command = shlex.join(["timeout", "-k", "2", f"{max(1.0, timeout):.0f}", *argv])  # 0 would mean none
        start = time.monotonic()
        try:
            result = self._run(command, cwd=cwd or self.workspace, env=full_env, timeout=timeout)
        except (TimeoutError, asyncio.TimeoutError) as exc:
            return ExecResult(argv=argv, exit_code=124, stdout="", stderr=f"harbor exec timed out: {exc}",
                              timed_out=True, duration_sec=time.monotonic() - start)
        code = result.return_code
        return ExecResult(argv=argv, exit_code=code, stdout=result.stdout or "", stderr=result.stderr or "",
                          timed_out=code in (124, 137), duration_sec=time.monotonic() - start)

    def write_files(self, files: Mapping[str, bytes | str]) -> None:
        for path, data in files.items():
            raw = data.encode() if isinstance(data, str) else data
            encoded = base64.b64encode(raw).decode("ascii")
            target = shlex.quote(path)
            chunks = [encoded[i:i + CHUNK_B64] for i in range(0, len(encoded), CHUNK_B64)] or [""]
            for n, chunk in enumerate(chunks):
                redirect = ">" if n == 0 else ">>"
                prefix = f"mkdir -p {shlex.quote(posixpath.dirname(path) or '/')} && " if n == 0 else ""
                command = f"{prefix}base64 -d {redirect} {target} <<'R2E_B64_EOF'\n{chunk}\nR2E_B64_EOF"
                result = self._run(command, cwd="/", env=None, timeout=120)
                if result.return_code != 0:
                    from repo2rlenv.errors import SandboxError

                    raise SandboxError(f"writing {path} in the Harbor environment failed: "
                                       f"{(result.stderr or result.stdout or '').strip()[-300:]}")

    def read_file(self, path: str) -> bytes | None:
        quoted = shlex.quote(path)
        result = self._run(f"test -f {quoted} && base64 -w0 {quoted}", cwd="/", env=None, timeout=120)
        if result.return_code != 0:
            return None
        return base64.b64decode((result.stdout or "").strip())

    def close(self) -> None:
        """Harbor owns the environment's lifetime."""

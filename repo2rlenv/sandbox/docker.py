"""The Docker sandbox: one image per repo snapshot, one warm container per session, `exec` per run.

Containers run with no network, memory/CPU/pids limits, all capabilities dropped and an environment
built from scratch (nothing of the host's, so no secrets). Every command runs under coreutils
`timeout -k`, which kills its whole process group; a host-side watchdog kills the container if even that
does not return, so a hanging suite never outlives timeout + a few seconds.
"""

from __future__ import annotations

import hashlib
import io
import shlex
import tarfile
import threading
import time
import uuid
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any, Mapping

from repo2rlenv.digest import tree_digest
from repo2rlenv.errors import SandboxError, SandboxUnavailable
from repo2rlenv.sandbox.base import ExecResult, Limits, base_env, scrub_env
from repo2rlenv.sandbox.install import InstallPlan, plan_install

WORKSPACE = "/workspace"
VENV_PYTHON = "/opt/venv/bin/python"
LABEL = "repo2rlenv"
# Grace period after the in-container `timeout` before the host watchdog kills the container.
_WATCHDOG_GRACE_SEC = 4.0


def docker_client() -> Any:
    """A connected docker SDK client, or SandboxUnavailable with one clear line."""
    import docker  # the SDK pulls in requests; only sandbox users pay for it

    try:
        client = docker.from_env(timeout=30)
        client.ping()
    except Exception as exc:  # DockerException, ConnectionError, PermissionError …
        raise SandboxUnavailable(
            f"no Docker daemon answers ({type(exc).__name__}); start dockerd or use --sandbox local"
        ) from exc
    return client


def render_dockerfile(base_image: str, plan: InstallPlan) -> str:
    """The sandbox image's Dockerfile for `plan`."""
    template = resources.files("repo2rlenv.sandbox").joinpath("templates/Dockerfile").read_text()
    commands = [f"{VENV_PYTHON} -m pip install -q " + " ".join(shlex.quote(a) for a in args)
                for args in plan.pip_installs]
    return Template(template).substitute(base_image=base_image, install_commands=" \\\n && ".join(commands))


def _tar_context(repo_dir: Path, dockerfile: str, ca_bundle: Path | None) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        def add_bytes(name: str, data: bytes) -> None:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = 0
            tar.addfile(info, io.BytesIO(data))

        add_bytes("Dockerfile", dockerfile.encode())
        add_bytes("extra-ca.pem", ca_bundle.read_bytes() if ca_bundle else b"")
        tar.add(repo_dir, arcname="repo")
    return buf.getvalue()


def build_image(client: Any, *, repo_dir: Path, tag_name: str, base_image: str, ca_bundle: Path | None,
                plan: InstallPlan) -> str:
    """Build (or reuse) the image for `repo_dir`; returns its tag."""
    try:
        base = client.images.get(base_image)
    except Exception as exc:
        raise SandboxUnavailable(
            f"base image {base_image!r} not found; build it with scripts/build_base_image.sh"
        ) from exc
    dockerfile = render_dockerfile(base_image, plan)
    key = hashlib.sha256(
        (tree_digest(repo_dir) + base.id + dockerfile + (ca_bundle.read_text() if ca_bundle else "")).encode()
    ).hexdigest()[:16]
    tag = f"repo2rlenv-sandbox/{tag_name}:{key}"
    try:
        client.images.get(tag)
        return tag
    except Exception:
        pass
    context = _tar_context(repo_dir, dockerfile, ca_bundle)
    try:
        # Builds reach the package index through the host network; runs never have a network.
        client.images.build(fileobj=io.BytesIO(context), custom_context=True, tag=tag, rm=True,
                            forcerm=True, network_mode="host", labels={LABEL: "sandbox"})
    except Exception as exc:
        log = getattr(exc, "build_log", None) or []
        lines = [str(item.get("stream", item.get("error", ""))).strip() for item in log if isinstance(item, dict)]
        tail = " | ".join(line for line in lines if line)[-600:]
        raise SandboxError(f"building the sandbox image for {tag_name} failed: {tail or exc}") from exc
    return tag


class DockerSession:
    """A running container with the repo at /workspace."""

    workspace = WORKSPACE
    python = VENV_PYTHON
    scratch = "/tmp/r2e"

    def __init__(self, client: Any, image: str, limits: Limits, *, harden: bool = True):
        self._client = client
        self._image = image
        self._limits = limits
        # `harden=False` runs with Docker's default capabilities, as Harbor runs task containers.
        self._harden = harden
        self._container: Any = None
        self._start()

    def _start(self) -> None:
        self._container = self._client.containers.run(
            self._image, ["sleep", "infinity"], detach=True, init=True,
            name=f"r2e-{uuid.uuid4().hex[:12]}", labels={LABEL: "session"},
            network_mode="none", mem_limit=f"{self._limits.memory_mb}m",
            memswap_limit=f"{self._limits.memory_mb}m", nano_cpus=int(self._limits.cpus * 1e9),
            pids_limit=self._limits.pids,
            **({"cap_drop": ["ALL"], "security_opt": ["no-new-privileges"]} if self._harden else {}),
            environment=base_env("/tmp/home", "/tmp", "/opt/venv/bin:/usr/local/bin:/usr/bin:/bin"),
            working_dir=WORKSPACE,
        )
        self._container.exec_run(["mkdir", "-p", "/tmp/home", self.scratch])

    def exec(self, argv: list[str], *, cwd: str | None = None, env: Mapping[str, str] | None = None,
             timeout: float | None = None) -> ExecResult:
        timeout = timeout or self._limits.timeout_sec
        full_env = base_env("/tmp/home", "/tmp", "/opt/venv/bin:/usr/local/bin:/usr/bin:/bin")
        full_env.update(scrub_env(env))
        wrapped = ["timeout", "-k", "2", f"{timeout:.1f}", *argv]
        box: dict[str, Any] = {}

        def run() -> None:
            try:
                box["result"] = self._container.exec_run(wrapped, workdir=cwd or WORKSPACE,
                                                         environment=full_env, demux=True)
            except Exception as exc:  # surfaced below
                box["error"] = exc

        start = time.monotonic()
        worker = threading.Thread(target=run, daemon=True)
        worker.start()
        worker.join(timeout + _WATCHDOG_GRACE_SEC)
        duration = time.monotonic() - start
        if worker.is_alive():
            # `timeout` itself did not come back (e.g. the pid limit stopped it forking the kill): the
            # container is unusable, so replace it and report a timeout.
            self._restart()
            return ExecResult(argv=argv, exit_code=137, stdout="", stderr="killed by watchdog",
                              timed_out=True, duration_sec=duration)
        if "error" in box:
            raise SandboxError(f"docker exec failed: {box['error']}")
        code, (out, err) = box["result"]
        code = code if code is not None else -1
        return ExecResult(argv=argv, exit_code=code, stdout=(out or b"").decode("utf-8", "replace"),
                          stderr=(err or b"").decode("utf-8", "replace"),
                          timed_out=code in (124, 137), duration_sec=duration)

    def write_files(self, files: Mapping[str, bytes | str]) -> None:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            for path, data in files.items():
                raw = data.encode() if isinstance(data, str) else data
                info = tarfile.TarInfo(path.lstrip("/"))
                info.size = len(raw)
                info.mtime = int(time.time())
                info.mode = 0o644
                tar.addfile(info, io.BytesIO(raw))
        if not self._container.put_archive("/", buf.getvalue()):
            raise SandboxError("copying files into the container failed")

    def read_file(self, path: str) -> bytes | None:
        try:
            stream, _ = self._container.get_archive(path)
        except Exception:
            return None
        data = io.BytesIO(b"".join(stream))
        with tarfile.open(fileobj=data) as tar:
            member = tar.next()
            handle = tar.extractfile(member) if member else None
            return handle.read() if handle else None

    def _restart(self) -> None:
        self._remove()
        self._start()

    def _remove(self) -> None:
        if self._container is not None:
            try:
                self._container.remove(force=True)
            except Exception:
                pass
            self._container = None

    def close(self) -> None:
        self._remove()

    def __enter__(self) -> "DockerSession":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class DockerSandbox:
    """Runs a repo's code in containers of an image built for its snapshot."""

    name = "docker"
    isolation = "container"
    network_isolated = True

    def __init__(self, *, base_image: str, limits: Limits, ca_bundle: Path | None = None, tag_name: str = "repo",
                 client: Any = None):
        self.base_image = base_image
        self.limits = limits
        self.ca_bundle = ca_bundle
        self.tag_name = tag_name
        self._client = client or docker_client()
        self.image: str | None = None
        self.plan: InstallPlan | None = None

    def prepare(self, repo_dir: Path) -> None:
        self.plan = plan_install(repo_dir)
        self.image = build_image(self._client, repo_dir=repo_dir, tag_name=self.tag_name,
                                 base_image=self.base_image, ca_bundle=self.ca_bundle, plan=self.plan)

    def open(self) -> DockerSession:
        if self.image is None:
            raise SandboxError("DockerSandbox.open() before prepare()")
        return DockerSession(self._client, self.image, self.limits)

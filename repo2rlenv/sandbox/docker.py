"""The Docker sandbox: one image per repo snapshot, one warm container per session, `exec` per run.

It also builds environments keyed by dependency spec (`sandbox/environments.py`): an image per key, built
from the first tree with that key, whose sessions get another tree of the same key swapped into
/workspace (the image lists the files it was built with, so the swap removes and rewrites exactly).

Containers run with no network, memory/CPU/pids limits, all capabilities dropped and an environment
built from scratch (nothing of the host's, so no secrets). Every command runs under coreutils
`timeout -k`, which kills its whole process group; a host-side watchdog kills the container if even that
does not return, so a hanging suite never outlives timeout + a few seconds.
"""

from __future__ import annotations

import hashlib
import io
import json
import posixpath
import tarfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Mapping

from repo2rlenv.digest import tree_digest
from repo2rlenv.errors import SandboxError, SandboxUnavailable
from repo2rlenv.sandbox.base import ExecResult, Limits, base_env, build_failure, scrub_env
from repo2rlenv.sandbox.dockerfile import VENV_PYTHON
from repo2rlenv.sandbox.dockerfile import render_dockerfile as _render
from repo2rlenv.sandbox.environments import environment_plan, file_hashes
from repo2rlenv.sandbox.install import InstallPlan, plan_install
from repo2rlenv.sandbox.owners import OWNER_LABEL, owner_label, reap_once, start_tethered

WORKSPACE = "/workspace"
LABEL = "repo2rlenv"
# In an environment image: the files (path → sha256) of the tree it was built from.
TREE_MANIFEST = "/opt/r2e/tree-files.json"
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
    return _render("repo2rlenv.sandbox", "templates/Dockerfile", plan, base_image)


def _tar_context(repo_dir: Path, dockerfile: str, ca_bundle: Path | None,
                 extra: Mapping[str, bytes] | None = None) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        def add_bytes(name: str, data: bytes) -> None:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = 0
            tar.addfile(info, io.BytesIO(data))

        add_bytes("Dockerfile", dockerfile.encode())
        add_bytes("extra-ca.pem", ca_bundle.read_bytes() if ca_bundle else b"")
        for name, data in (extra or {}).items():
            add_bytes(name, data)
        tar.add(repo_dir, arcname="repo")
    return buf.getvalue()


def base_image_id(client: Any, base_image: str) -> str:
    """The daemon's ID of `base_image` now (what derived images are keyed by), or SandboxUnavailable."""
    try:
        return client.images.get(base_image).id
    except Exception as exc:
        suite = base_image.rpartition(":")[2] if base_image.startswith("repo2rlenv-base:") else None
        how = f"scripts/build_base_image.sh --suite {suite}" if suite else "scripts/build_base_image.sh"
        raise SandboxUnavailable(f"base image {base_image!r} not found; build it with {how}") from exc


def _image_exists(client: Any, tag: str) -> bool:
    try:
        client.images.get(tag)
        return True
    except Exception:
        return False


def build_log_text(exc: BaseException) -> str:
    """The whole log of a failed `images.build` (the SDK's build_log is an iterator: read it once, here)."""
    log = getattr(exc, "build_log", None) or []
    return "".join(str(item.get("stream", item.get("error", "")) or "") + ("\n" if "error" in item else "")
                   for item in log if isinstance(item, dict)) or str(exc)


def _build(client: Any, context: bytes, tag: str, tag_name: str) -> None:
    try:
        # Builds reach the package index through the host network; runs never have a network.
        client.images.build(fileobj=io.BytesIO(context), custom_context=True, tag=tag, rm=True,
                            forcerm=True, network_mode="host", labels={LABEL: "sandbox"})
    except Exception as exc:
        raise build_failure(f"building the sandbox image for {tag_name} failed", build_log_text(exc)) from exc


def build_image(client: Any, *, repo_dir: Path, tag_name: str, base_image: str, ca_bundle: Path | None,
                plan: InstallPlan) -> str:
    """Build (or reuse) the image for `repo_dir`; returns its tag."""
    base_id = base_image_id(client, base_image)
    dockerfile = render_dockerfile(base_image, plan)
    key = hashlib.sha256(
        (tree_digest(repo_dir) + base_id + dockerfile + (ca_bundle.read_text() if ca_bundle else "")).encode()
    ).hexdigest()[:16]
    tag = f"repo2rlenv-sandbox/{tag_name}:{key}"
    if not _image_exists(client, tag):
        _build(client, _tar_context(repo_dir, dockerfile, ca_bundle), tag, tag_name)
    return tag


def environment_tag(tag_name: str, key: str) -> str:
    """The image tag of environment `key` (per repo: an image also holds its build tree)."""
    return f"repo2rlenv-env/{tag_name}:{key}"


def build_environment_image(client: Any, *, key: str, repo_dir: Path, tag_name: str, base_image: str,
                            ca_bundle: Path | None, plan: InstallPlan) -> str:
    """Build (or reuse) environment `key` from `repo_dir`; the image lists the tree's files at
    TREE_MANIFEST. Returns its tag."""
    tag = environment_tag(tag_name, key)
    if not _image_exists(client, tag):
        dockerfile = render_dockerfile(base_image, plan) + f"COPY tree-files.json {TREE_MANIFEST}\n"
        manifest = json.dumps(file_hashes(repo_dir), sort_keys=True).encode()
        _build(client, _tar_context(repo_dir, dockerfile, ca_bundle, {"tree-files.json": manifest}), tag, tag_name)
    return tag


def _owned_by_root(info: tarfile.TarInfo) -> tarfile.TarInfo:
    # As `COPY` leaves them: the container's root owns the workspace, whoever owns the host's files.
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info


# Removes the listed workspace files and then the directories they leave empty (run with the session's
# python, which every image has).
_REMOVE_SCRIPT = """\
import json, os, sys
root = os.path.realpath(sys.argv[1])
for rel in json.load(open(sys.argv[2])):
    path = os.path.join(root, rel)
    if os.path.lexists(path):
        os.remove(path)
    parent = os.path.dirname(path)
    while parent != root and os.path.isdir(parent) and not os.listdir(parent):
        os.rmdir(parent)
        parent = os.path.dirname(parent)
"""


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
        self._tether: Any = None  # the attach socket that keeps the container alive (sandbox/owners.py)
        self._start()

    def _start(self) -> None:
        self._container, self._tether = start_tethered(
            self._client, self._image, init=True,
            name=f"r2e-{uuid.uuid4().hex[:12]}", labels={LABEL: "session", OWNER_LABEL: owner_label()},
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
        # `timeout 0` would mean no limit at all.
        wrapped = ["timeout", "-k", "2", f"{max(timeout, 0.1):.1f}", *argv]
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

    def sync_workspace(self, tree_dir: Path) -> None:
        """Make /workspace hold exactly `tree_dir`'s files, starting from an environment image's build
        tree (TREE_MANIFEST): files only the build tree has are removed, new or different ones written.
        Anything the install generated in the workspace (metadata, compiled extensions) stays."""
        raw = self.read_file(TREE_MANIFEST)
        built: dict[str, str] = json.loads(raw) if raw else {}
        wanted = file_hashes(tree_dir)
        stale = sorted(set(built) - set(wanted))
        if stale:
            script, listing = posixpath.join(self.scratch, "sync.py"), posixpath.join(self.scratch, "stale.json")
            self.write_files({script: _REMOVE_SCRIPT, listing: json.dumps(stale)})
            res = self.exec([self.python, script, WORKSPACE, listing], timeout=300)
            if res.exit_code != 0:
                raise SandboxError(f"cannot clear the workspace for {tree_dir.name}: {res.tail(3)}")
        changed = [rel for rel, digest in wanted.items() if built.get(rel) != digest]
        if changed:
            buf = io.BytesIO()
            with tarfile.open(fileobj=buf, mode="w") as tar:
                for rel in changed:
                    tar.add(tree_dir / rel, arcname=rel, recursive=False, filter=_owned_by_root)
            if not self._container.put_archive(WORKSPACE, buf.getvalue()):
                raise SandboxError(f"copying {tree_dir.name} into the container failed")

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
        if self._tether is not None:
            try:
                self._tether.close()
            except OSError:
                pass
            self._tether = None

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

    def __init__(self, *, base_image: str | None, limits: Limits, ca_bundle: Path | None = None,
                 tag_name: str = "repo", client: Any = None, version_hint: str | None = None):
        # None: each plan picks its image from the repo's requires-python (discovery/python.py).
        self.base_image = base_image
        # The version of the ref's latest tag, told to VCS build backends (discovery/version.py).
        self.version_hint = version_hint
        self.limits = limits
        self.ca_bundle = ca_bundle
        self.tag_name = tag_name
        self._client = client or docker_client()
        # Session containers of killed runs on this host are removed before this run adds its own.
        reap_once(self._client, f"{LABEL}=session")
        self.image: str | None = None
        self.plan: InstallPlan | None = None

    def prepare(self, repo_dir: Path) -> None:
        self.plan = plan_install(repo_dir, version_hint=self.version_hint, base_image=self.base_image)
        self.image = build_image(self._client, repo_dir=repo_dir, tag_name=self.tag_name,
                                 base_image=self.plan.base_image, ca_bundle=self.ca_bundle, plan=self.plan)

    def open(self) -> DockerSession:
        if self.image is None:
            raise SandboxError("DockerSandbox.open() before prepare()")
        return DockerSession(self._client, self.image, self.limits)

    # --- environments keyed by dependency spec (sandbox/environments.py) --------------------------

    def plan_environment(self, tree_dir: Path) -> InstallPlan:
        return environment_plan(tree_dir, version_hint=self.version_hint, base_image=self.base_image)

    def environment_salt(self, plan: InstallPlan) -> str:
        ca = self.ca_bundle.read_text() if self.ca_bundle else ""
        return base_image_id(self._client, plan.base_image) + render_dockerfile(plan.base_image, plan) + ca

    def build_environment(self, key: str, tree_dir: Path, plan: InstallPlan) -> str:
        return build_environment_image(self._client, key=key, repo_dir=tree_dir, tag_name=self.tag_name,
                                       base_image=plan.base_image, ca_bundle=self.ca_bundle, plan=plan)

    def open_environment(self, handle: str, tree_dir: Path) -> DockerSession:
        session = DockerSession(self._client, handle, self.limits)
        try:
            session.sync_workspace(tree_dir)
        except BaseException:
            session.close()
            raise
        return session

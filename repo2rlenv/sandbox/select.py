"""`--sandbox auto|docker|local`: pick and build the sandbox a run will use."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable

from repo2rlenv.errors import SandboxUnavailable
from repo2rlenv.sandbox.base import Limits, Sandbox


def choose_sandbox(choice: str, *, base_image: str | None, limits: Limits, cache_dir: Path, tag_name: str,
                   ca_bundle: Path | None = None, warn: Callable[[str], None] | None = None,
                   version_hint: str | None = None, python: str | None = None) -> Sandbox:
    """Docker when asked or when a daemon answers (auto); else the local sandbox with a warning.

    `base_image` None: each install plan picks its base image from the repo's requires-python; the
    default image must exist for Docker to count as usable. `python`: a host interpreter to build the local
    sandbox's venv from (then local always). `version_hint`: the version of the ref's
    latest tag, for VCS build backends."""
    from repo2rlenv.discovery.python import DEFAULT_IMAGE
    from repo2rlenv.sandbox.local import WARNING, LocalSandbox

    probe = base_image or DEFAULT_IMAGE.tag

    say = warn or (lambda msg: print(f"warning: {msg}", file=sys.stderr))
    if python is not None:
        # A host interpreter (the project's own, or its venv's) can only serve the local sandbox.
        if choice == "docker":
            raise SandboxUnavailable("--python runs tests on this host: it needs --sandbox local or auto")
        say(WARNING)
        return LocalSandbox(limits=limits, cache_dir=cache_dir, version_hint=version_hint, python=python)
    if choice in ("docker", "auto"):
        from repo2rlenv.sandbox.docker import DockerSandbox, docker_client

        try:
            client = docker_client()
            # The base image must exist too, or `auto` is not really able to use Docker.
            client.images.get(probe)
            return DockerSandbox(base_image=base_image, limits=limits, ca_bundle=ca_bundle, tag_name=tag_name,
                                 client=client, version_hint=version_hint)
        except SandboxUnavailable:
            if choice == "docker":
                raise
            say("no Docker daemon answers; falling back to the local sandbox")
        except Exception:
            if choice == "docker":
                raise SandboxUnavailable(
                    f"base image {probe!r} not found; build it with scripts/build_base_image.sh"
                ) from None
            say(f"base image {probe!r} not found; falling back to the local sandbox")
    say(WARNING)
    return LocalSandbox(limits=limits, cache_dir=cache_dir, version_hint=version_hint)

"""The built image: what the agent's container really holds, read from inside it.

The build context can be clean and the image still not: a build step that copies or installs the repo
into site-packages, a package manager's cache, or git objects of other versions. So the audit builds each
task's image (as validation does, cached by the context's content) and runs `image_probe/image_probe.py`
in it without network: files with grading names, B's and the oracle's text anywhere on the filesystem,
the target file against A's, and the history — one commit, no refs, reflog or objects besides it.
"""

from __future__ import annotations

import json
from typing import Any

from repo2rlenv.audit.files import Hidden
from repo2rlenv.audit.models import Check
from repo2rlenv.dataset.taskdir import TaskPaths
from repo2rlenv.payload import payload_files
from repo2rlenv.sandbox.base import Limits
from repo2rlenv.sandbox.docker import WORKSPACE, DockerSession
from repo2rlenv.validate import build_task_image

_LIMITS = Limits(timeout_sec=300, memory_mb=1024, cpus=1.0, pids=64)


# The payload folder of the script run inside a task's image (payload.py).
IMAGE_PROBE_PACKAGE = "repo2rlenv.audit.image_probe"


def probe_source() -> str:
    return payload_files(IMAGE_PROBE_PACKAGE)["image_probe.py"]


def findings(probe: dict[str, Any]) -> tuple[list[str], list[str]]:
    """What the probe's answer shows: (leaks into the image, problems of its git history). Needles the
    probe found common (held by installed files it could vouch for) are already left out of `holding`."""
    leaked = [f"{path} (a grading file's name)" for path in probe["named"]]
    leaked += [f"{path} holds {needle!r}" for path, needle in probe["holding"]]
    if not probe["target_is_a"]:
        leaked.append("the target file in /workspace is not A's")
    git = probe["git"]
    history = []
    if git["commits"] != 1:
        history.append(f"{git['commits']} commits (one is expected)")
    extra_refs = [r for r in git["refs"] if r != "refs/heads/main"]
    if extra_refs:
        history.append(f"refs besides main: {', '.join(extra_refs[:5])}")
    if git["unreachable"] or git["dangling"]:
        history.append(f"{len(git['unreachable']) + len(git['dangling'])} unreachable or dangling objects")
    if git["stored_objects"] > git["reachable_objects"]:
        history.append(f"{git['stored_objects']} objects stored, {git['reachable_objects']} reachable from the commit")
    return leaked, history


def check_image(client: Any, task: TaskPaths, hidden: Hidden, target: str, target_sha256: str) -> list[Check]:
    """The `image` and `history` checks of one task, from its built image."""
    image = build_task_image(client, task)
    job = {"workspace": WORKSPACE, "names": list(hidden.names), "needles": hidden.needles, "target": target,
           "target_sha256": target_sha256}
    with DockerSession(client, image, _LIMITS, harden=False) as session:
        res = session.exec(["python3", "-c", probe_source(), json.dumps(job)])
    if res.exit_code != 0:
        reason = (res.stderr.strip().splitlines() or [f"exit {res.exit_code}"])[-1]
        return [Check(name="image", verdict="skipped", found=[f"the probe failed in the image: {reason}"]),
                Check(name="history", verdict="skipped", found=["the probe failed"])]
    probe = json.loads(res.stdout)
    leaked, history = findings(probe)
    common = [f"{needle!r} (also in {path})" for path, needle in probe.get("common", [])]
    return [Check(name="image", verdict="problem" if leaked else "ok", found=leaked, common=common),
            Check(name="history", verdict="problem" if history else "ok", found=history)]

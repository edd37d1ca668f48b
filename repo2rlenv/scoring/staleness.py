"""The warning a scorer gives for a task whose verifier predates the newest integrity fix.

Such a task still scores, and exactly as Harbor would grade it: but its verifier lacks a fix that closed
a reward hack, so a policy trained on it can learn the hack. The warning names the cure,
`repo2rlenv upgrade DATASET`. Given once per task directory per process, however many scorers open it.
"""

from __future__ import annotations

import threading
import warnings
from pathlib import Path

from repo2rlenv.verifiers.test_synthesis.verifier_version import INTEGRITY_VERSION


class StaleVerifierWarning(UserWarning):
    """A task ships a verifier older than the newest integrity fix (`INTEGRITY_VERSION`)."""


_warned: set[Path] = set()
_lock = threading.Lock()


def is_stale(recorded: int | None) -> bool:
    """Whether a task recording verifier version `recorded` (None: none recorded) lacks the newest fix."""
    return recorded is None or recorded < INTEGRITY_VERSION


def warn_if_stale(task_root: Path, recorded: int | None) -> bool:
    """Warn (once per task dir) when the task's verifier is stale; whether it is."""
    if not is_stale(recorded):
        return False
    key = task_root.resolve()
    with _lock:
        if key in _warned:
            return True
        _warned.add(key)
    have = "records no verifier version (made before versions were recorded)" if recorded is None \
        else f"ships verifier version {recorded}"
    dataset = task_root.parent.parent if task_root.parent.name == "tasks" else task_root.parent
    warnings.warn(f"task {task_root.name} {have}, older than the newest integrity fix (version "
                  f"{INTEGRITY_VERSION}): its rewards may be open to a hack the fix closed. Bring the dataset up "
                  f"to date with `repo2rlenv upgrade {dataset}`.", StaleVerifierWarning, stacklevel=3)
    return True

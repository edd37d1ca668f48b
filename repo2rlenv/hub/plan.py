"""Which files a push must send, and how they are grouped into commits.

A file is sent only when its bytes differ from the copy already on the branch (git blob sha1 for
regular files, sha256 for LFS files, as the Hub lists them); a managed path the new folder no longer
has is deleted. Commits are kept within the Hub's comfortable sizes by grouping whole tasks, and the
dataset-level files (table, card, registry, manifest) and the deletions go in the last commit, so the
card never describes tasks that are not there yet.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from pydantic import BaseModel, ConfigDict, Field

from repo2rlenv.hub.layout import is_managed, list_files, task_unit


class CommitLimits(BaseModel):
    """Upper bounds for one commit (huggingface_hub's large-folder uploader uses the same magnitudes)."""

    model_config = ConfigDict(extra="forbid")

    max_files: int = Field(256, ge=1, description="Files added or deleted per commit.")
    max_bytes: int = Field(100 * 2**20, ge=1, description="Bytes of file content per commit.")


@dataclass(frozen=True, slots=True)
class RemoteFile:
    """A file on the branch, as the Hub's tree listing describes it."""

    path: str
    blob_id: str
    lfs_sha256: str | None = None


@dataclass(slots=True)
class CommitBatch:
    """The operations of one commit."""

    tasks: list[str] = field(default_factory=list)
    add: list[str] = field(default_factory=list)
    delete: list[str] = field(default_factory=list)
    dataset_files: bool = False  # carries the table/card/registry/manifest
    size: int = 0


@dataclass(frozen=True, slots=True)
class PushPlan:
    changed: tuple[str, ...]
    unchanged: tuple[str, ...]
    stale: tuple[str, ...]
    batches: tuple[CommitBatch, ...]


def git_blob_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def is_unchanged(data: bytes, remote: RemoteFile) -> bool:
    if remote.lfs_sha256 is not None:
        return hashlib.sha256(data).hexdigest() == remote.lfs_sha256
    return git_blob_sha1(data) == remote.blob_id


def plan_push(folder: Path, remote: Iterable[RemoteFile], limits: CommitLimits) -> PushPlan:
    remote_by_path = {f.path: f for f in remote}
    local = list_files(folder)
    changed, unchanged, sizes = [], [], {}
    for rel in local:
        data = (folder / rel).read_bytes()
        sizes[rel] = len(data)
        known = remote_by_path.get(rel)
        (unchanged if known is not None and is_unchanged(data, known) else changed).append(rel)
    local_set = set(local)
    stale = sorted(p for p in remote_by_path if is_managed(p) and p not in local_set)
    return PushPlan(changed=tuple(changed), unchanged=tuple(unchanged), stale=tuple(stale),
                    batches=tuple(_batches(changed, stale, sizes, limits)))


def _batches(changed: list[str], stale: list[str], sizes: dict[str, int], limits: CommitLimits) -> list[CommitBatch]:
    groups: dict[str | None, list[str]] = {}
    for rel in changed:
        groups.setdefault(task_unit(rel), []).append(rel)
    dataset_level = groups.pop(None, [])
    batches: list[CommitBatch] = []
    current = CommitBatch()

    def fits(n_files: int, n_bytes: int) -> bool:
        ops = len(current.add) + len(current.delete)
        return ops == 0 or (ops + n_files <= limits.max_files and current.size + n_bytes <= limits.max_bytes)

    for task_id, files in groups.items():
        group_bytes = sum(sizes[f] for f in files)
        if not fits(len(files), group_bytes):
            batches.append(current)
            current = CommitBatch()
        current.tasks.append(task_id)  # type: ignore[arg-type]  # None was popped above
        current.add.extend(files)
        current.size += group_bytes
    if dataset_level or stale:
        tail_bytes = sum(sizes[f] for f in dataset_level)
        if not fits(len(dataset_level) + len(stale), tail_bytes):
            batches.append(current)
            current = CommitBatch()
        current.add.extend(dataset_level)
        current.delete.extend(stale)
        current.size += tail_bytes
        current.dataset_files = bool(dataset_level)
    if current.add or current.delete:
        batches.append(current)
    return batches

"""`repo2rlenv pull`: rebuild a published dataset on disk from the Hub, byte for byte.

The branch is resolved to one commit first and every file is downloaded at that commit, into a hidden
staging dir next to OUT that is renamed when complete. The Hub keeps no file modes and no empty
directories, so both come back from the table (`files[].executable`, `empty_dirs`); the same table is
then used to check that every task file on disk has exactly the bytes that were published.
"""

from __future__ import annotations

import base64
import shutil
import tempfile
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from repo2rlenv import atomic
from repo2rlenv.hub.connection import REPO_TYPE, check_repo_id, hf_api, reported_as, resolve_endpoint, resolve_token
from repo2rlenv.hub.errors import MissingToken, NotADataset, PullFailed
from repo2rlenv.hub.export import check_out_dir
from repo2rlenv.hub.layout import PublishedPaths, list_files, managed_patterns
from repo2rlenv.hub.source import open_dataset


class PullResult(BaseModel):
    """What a pull brought back."""

    model_config = ConfigDict(extra="forbid")

    repo_id: str
    commit: str
    root: Path
    tasks: int
    files: int


def pull_dataset(repo_id: str, out: Path, *, revision: str | None = None, token: str | None = None,
                 endpoint: str | None = None) -> PullResult:
    """Download the dataset repo `repo_id` (at `revision`) into `out` and check it against its table."""
    from huggingface_hub import snapshot_download

    check_repo_id(repo_id)
    check_out_dir(out)
    try:
        token = resolve_token(token)
    except MissingToken:
        token = None  # public datasets need none; a private one answers 401/404 below
    endpoint = resolve_endpoint(endpoint)
    api = hf_api(endpoint, token)
    staging = atomic.staging_dir(out.parent, out.name)
    try:
        with reported_as(PullFailed, lambda why: f"pull of {repo_id} failed: {why}", endpoint=endpoint, token=token):
            commit = api.dataset_info(repo_id, revision=revision).sha
            with tempfile.TemporaryDirectory(prefix="r2e-pull-cache-") as cache:
                # A private cache leaves the user's shared one untouched; only the layout's paths are fetched
                # (the Hub's .gitattributes and files added by hand stay on the Hub).
                snapshot_download(repo_id, repo_type=REPO_TYPE, revision=commit, local_dir=staging, cache_dir=cache,
                                  token=token, endpoint=endpoint, allow_patterns=managed_patterns())
        shutil.rmtree(staging / ".cache", ignore_errors=True)
        _restore_and_check(repo_id, staging)
        atomic.publish_dir(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    tasks = len(PublishedPaths(out).task_ids())
    return PullResult(repo_id=repo_id, commit=commit, root=out, tasks=tasks, files=len(list_files(out)))


def _restore_and_check(repo_id: str, root: Path) -> None:
    """Restore executable bits and empty directories from the table; check every task file against it."""
    import pyarrow.parquet as pq

    paths = PublishedPaths(root)
    if not paths.table.is_file():
        raise PullFailed(f"{repo_id} does not hold a repo2rlenv dataset (no {paths.table.relative_to(root)})")
    rows = pq.read_table(paths.table, columns=["path", "files", "empty_dirs"]).to_pylist()
    expected: set[str] = set()
    for row in rows:
        for entry in row["files"]:
            rel = f"{row['path']}/{entry['path']}"
            expected.add(rel)
            _check_file(repo_id, _inside(repo_id, root, rel), rel, entry)
        for rel in row["empty_dirs"]:
            _inside(repo_id, root, f"{row['path']}/{rel}").mkdir(parents=True, exist_ok=True)
    on_disk = {rel for rel in list_files(root) if rel.startswith(f"{paths.tasks.name}/")}
    extra = sorted(on_disk - expected)
    if extra:
        raise PullFailed(f"{repo_id}: {extra[0]} is in the repo but not in its table (the repo was edited by hand?)")
    try:
        open_dataset(root)
    except NotADataset as exc:
        raise PullFailed(f"{repo_id} does not hold a usable repo2rlenv dataset: {exc}") from None


def _inside(repo_id: str, root: Path, rel: str) -> Path:
    # The table comes from the Hub: a path in it must not reach outside the folder being rebuilt.
    path = root / rel
    if not path.resolve().is_relative_to(root.resolve()):
        raise PullFailed(f"{repo_id}: its table names a path outside the dataset: {rel}")
    return path


def _check_file(repo_id: str, path: Path, rel: str, entry: dict) -> None:
    if not path.is_file():
        raise PullFailed(f"{repo_id}: {rel} is in the table but was not downloaded")
    want = entry["content"].encode("utf-8") if entry["encoding"] == "utf-8" else base64.b64decode(entry["content"])
    if path.read_bytes() != want:
        raise PullFailed(f"{repo_id}: {rel} differs from the dataset's table (the repo was edited by hand?)")
    if entry["executable"]:
        path.chmod(path.stat().st_mode | 0o111)

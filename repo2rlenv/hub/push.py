"""`repo2rlenv push`: publish a dataset to a Hugging Face Hub dataset repo.

Steps: check the repo id, the dataset and its validation, and the token (all before any network call);
build the published folder (export.py) in a temp dir; create the repo (and branch) if needed; list the
branch; send only the files whose bytes changed and delete managed files the dataset no longer has, in
commits of whole tasks with the dataset-level files last (plan.py). If the Hub fails part-way, the
error says which commits landed, which tasks they carried, and what was not published.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, Callable

from pydantic import BaseModel, ConfigDict, Field

from repo2rlenv.hub.connection import REPO_TYPE, check_repo_id, hf_api, reported_as, resolve_endpoint, resolve_token
from repo2rlenv.hub.errors import PushFailed
from repo2rlenv.hub.export import build_folder
from repo2rlenv.hub.plan import CommitBatch, CommitLimits, PushPlan, RemoteFile, plan_push
from repo2rlenv.hub.registry import DEFAULT_BRANCH, DEFAULT_VERSION, publish_target
from repo2rlenv.hub.source import open_dataset, short_list


class PushResult(BaseModel):
    """What a push did."""

    model_config = ConfigDict(extra="forbid")

    repo_id: str
    revision: str
    url: str = Field(description="The dataset repo's git URL (what Harbor clones).")
    tasks: int
    commits: list[str] = Field(description="Ids of the commits made, oldest first (empty: already up to date).")
    uploaded: list[str] = Field(description="Paths sent because they are new or changed.")
    unchanged: int = Field(description="Files already on the branch with the same bytes (not sent).")
    deleted: list[str] = Field(description="Managed paths removed because the dataset no longer has them.")
    unvalidated: list[str] = Field(description="Tasks published without a passing validation (--include-unvalidated).")


def push_dataset(dataset_dir: Path, repo_id: str, *, token: str | None = None, endpoint: str | None = None,
                 private: bool = False, revision: str | None = None, commit_message: str | None = None,
                 include_unvalidated: bool = False, version: str = DEFAULT_VERSION,
                 limits: CommitLimits | None = None, progress: Callable[[str], None] | None = None) -> PushResult:
    """Publish the dataset at `dataset_dir` to the Hub dataset repo `repo_id` (created if missing)."""
    say = progress or (lambda _msg: None)
    check_repo_id(repo_id)
    dataset = open_dataset(dataset_dir)
    if not include_unvalidated:
        dataset.require_validated()
    token = resolve_token(token)
    endpoint = resolve_endpoint(endpoint)
    target = publish_target(repo_id, endpoint=endpoint, revision=revision, version=version)
    branch = target.revision
    message = commit_message or f"Publish {len(dataset.tasks)} repo2rlenv tasks"
    api = hf_api(endpoint, token)
    with tempfile.TemporaryDirectory(prefix="r2e-push-") as tmp:
        folder = Path(tmp) / "dataset"
        folder.mkdir()
        say(f"building the published folder for {len(dataset.tasks)} tasks")
        build_folder(dataset, folder, target)
        with reported_as(PushFailed, lambda why: f"push to {repo_id} failed before anything was uploaded: {why}",
                         endpoint=endpoint, token=token):
            plan = _prepare(api, repo_id, private, branch, folder, limits or CommitLimits())
        commits = _commit_all(api, repo_id, branch, folder, plan, message, say, token, endpoint)
    return PushResult(repo_id=repo_id, revision=revision or DEFAULT_BRANCH, url=target.git_url or "",
                      tasks=len(dataset.tasks), commits=commits, uploaded=list(plan.changed),
                      unchanged=len(plan.unchanged), deleted=list(plan.stale),
                      unvalidated=[t.task_id for t in dataset.unvalidated()])


def _prepare(api: Any, repo_id: str, private: bool, branch: str | None, folder: Path,
             limits: CommitLimits) -> PushPlan:
    from huggingface_hub import RepoFile

    api.create_repo(repo_id, repo_type=REPO_TYPE, private=private, exist_ok=True)
    if branch:
        api.create_branch(repo_id, repo_type=REPO_TYPE, branch=branch, exist_ok=True)
    listing = api.list_repo_tree(repo_id, repo_type=REPO_TYPE, revision=branch, recursive=True)
    remote = [RemoteFile(path=f.path, blob_id=f.blob_id, lfs_sha256=f.lfs.sha256 if f.lfs else None)
              for f in listing if isinstance(f, RepoFile)]
    return plan_push(folder, remote, limits)


def _commit_all(api: Any, repo_id: str, branch: str | None, folder: Path, plan: PushPlan, message: str,
                say: Callable[[str], None], token: str, endpoint: str) -> list[str]:
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete

    if not plan.batches:
        say(f"{repo_id} is already up to date ({len(plan.unchanged)} files unchanged)")
        return []
    total = len(plan.batches)
    commits: list[str] = []
    for number, batch in enumerate(plan.batches, start=1):
        ops: list[Any] = [CommitOperationAdd(path_in_repo=rel, path_or_fileobj=str(folder / rel)) for rel in batch.add]
        ops += [CommitOperationDelete(path_in_repo=rel) for rel in batch.delete]
        say(f"commit {number}/{total}: {_describe(batch)}")
        with reported_as(PushFailed, lambda why: _midway_message(repo_id, plan.batches, number - 1, why),
                         endpoint=endpoint, token=token):
            info = api.create_commit(repo_id, ops, commit_message=message if total == 1 else
                                     f"{message} ({number}/{total})", repo_type=REPO_TYPE, revision=branch)
        commits.append(info.oid)
    return commits


def _describe(batch: CommitBatch) -> str:
    parts = [f"{len(batch.tasks)} task(s)"] if batch.tasks else []
    if batch.dataset_files:
        parts.append("table, card and registry")
    if batch.delete:
        parts.append(f"{len(batch.delete)} stale file(s) removed")
    return f"{', '.join(parts)} ({len(batch.add)} files sent)"


def _midway_message(repo_id: str, batches: tuple[CommitBatch, ...], failed: int, reason: str) -> str:
    done, pending = batches[:failed], batches[failed:]
    done_tasks = [t for b in done for t in b.tasks]
    pending_tasks = [t for b in pending for t in b.tasks]
    head = f"push to {repo_id} failed at commit {failed + 1} of {len(batches)} ({reason})"
    if done:
        landed = f"committed: {len(done_tasks)} changed task(s) ({short_list(done_tasks)}) in {len(done)} commit(s)"
    else:
        landed = "nothing was committed, the repo is as it was"
    missing = [f"{len(pending_tasks)} changed task(s) ({short_list(pending_tasks)})"] if pending_tasks else []
    if any(b.dataset_files for b in pending):
        missing.append("the table, card, registry and manifest")
    stale = sum(len(b.delete) for b in pending)
    if stale:
        missing.append(f"the removal of {stale} stale file(s)")
    return f"{head}; {landed}; not committed: {', '.join(missing)}; rerun the push to finish"

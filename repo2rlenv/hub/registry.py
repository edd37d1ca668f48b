"""`registry.json` in Harbor's registry format, so `harbor run -d NAME@VERSION` can find the tasks.

Harbor (0.13 … 0.26, `harbor/models/registry.py`) reads a JSON list of dataset specs, each
`{name, version, description, tasks: [{name, git_url, git_commit_id, path}], metrics}`. A task with a
`git_url` is fetched from that git repository (a Hub dataset repo is one) at `git_commit_id`, or at the
default branch's head when it is null; without a `git_url` its `path` is a local path, or, under
`harbor run --repo URL`, a path inside that repository. The dataset name must not contain "/" (Harbor
reads `org/name` as a package reference), so it is the repo's name part.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

from pydantic import BaseModel, ConfigDict, Field

# The version a registry entry carries unless told otherwise: Harbor prefers "head" when it resolves a
# dataset without an explicit version, and the entry does track the branch head (git_commit_id is null).
DEFAULT_VERSION = "head"
DEFAULT_BRANCH = "main"


class RegistryTask(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="The task's name in Harbor (its directory name).")
    git_url: str | None = Field(description="Git repository holding the task; null: a local or --repo path.")
    git_commit_id: str | None = Field(None, description="Commit to fetch; null: the default branch's head.")
    path: str = Field(description="The task directory, relative to the repository root.")


class RegistryDataset(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    version: str
    description: str
    tasks: list[RegistryTask]
    metrics: list[dict[str, object]] = Field(default_factory=list, description="Harbor's default (mean reward).")


class PublishTarget(BaseModel):
    """Where the published dataset will live: what the registry and the card point at."""

    model_config = ConfigDict(extra="forbid")

    repo_id: str | None = Field(description="org/name on the Hub; None for an export not bound to a repo.")
    git_url: str | None = Field(description="The Hub repo's git URL (endpoint/datasets/org/name).")
    revision: str | None = Field(None, description="Branch pushed to; None for the default branch.")
    dataset_name: str
    version: str = DEFAULT_VERSION


def publish_target(repo_id: str | None, *, endpoint: str | None = None, revision: str | None = None,
                   version: str = DEFAULT_VERSION, fallback_name: str = "repo2rlenv-tasks") -> PublishTarget:
    """Where a push to `repo_id` (or, with None, an export bound to no repo) points the registry and card."""
    if repo_id is None:
        return PublishTarget(repo_id=None, git_url=None, dataset_name=fallback_name, version=version)
    from repo2rlenv.hub.connection import git_url, resolve_endpoint

    branch = revision if revision and revision != DEFAULT_BRANCH else None
    return PublishTarget(repo_id=repo_id, git_url=git_url(resolve_endpoint(endpoint), repo_id), revision=branch,
                         dataset_name=repo_id.split("/")[1], version=version)


def registry_entries(target: PublishTarget, task_paths: Sequence[str], description: str) -> list[RegistryDataset]:
    tasks = [RegistryTask(name=Path(path).name, git_url=target.git_url, path=path) for path in task_paths]
    return [RegistryDataset(name=target.dataset_name, version=target.version, description=description, tasks=tasks)]


def registry_json(entries: list[RegistryDataset]) -> str:
    return json.dumps([e.model_dump(mode="json") for e in entries], indent=2) + "\n"

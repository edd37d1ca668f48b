"""One scoring node: a `DatasetScorer` over the node's own copy of the dataset, its own warm pools and Docker.

`NodeScorer` is plain Python; `repo2rlenv.scoring.cluster` turns it into a Ray actor (one per node that
offers Docker) and is the only module that knows Ray. What crosses between the two is JSON of pydantic
models (`NodeInfo`, `Score`), so a driver and its nodes agree on the data, not on pickled classes.
"""

from __future__ import annotations

import os
import socket
import threading
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from repo2rlenv.errors import UserError


class NodeInfo(BaseModel):
    """What a node tells the driver once it is up."""

    model_config = ConfigDict(extra="forbid")

    host: str
    slots: int = Field(description="scores this node runs at once")
    tasks: list[str] = Field(description="task ids of the node's copy of the dataset")
    images: list[str] = Field(description="task ids whose current environment image the node already has")


class NodeStatus(BaseModel):
    """A scoring node as the driver sees it."""

    model_config = ConfigDict(extra="forbid")

    key: str = Field(description="host:node-id-prefix#n, new for every actor the driver starts")
    node_id: str = Field(description="the Ray node id")
    host: str
    in_flight: int = Field(description="requests sent to it and not answered yet")
    served: int = Field(description="answers it gave")


class NodeScorer:
    """Scores on this node. Threaded: the actor runs up to its capacity of calls at once, and the
    `DatasetScorer` bounds how many of them grade at a time (the rest wait for a slot here)."""

    def __init__(self, dataset_dir: str, slots: int, warm: int, max_open_tasks: int):
        # Nothing here calls a model; this keeps litellm (if anything imports it) from fetching its price map.
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        from repo2rlenv.sandbox.docker import docker_client
        from repo2rlenv.scoring.scorer import DatasetScorer

        root = Path(dataset_dir)
        if not (root / "tasks").is_dir():
            raise UserError(f"{socket.gethostname()} has no dataset at {dataset_dir} (no tasks/): every scoring "
                            f"node needs its own copy at the driver's path")
        self._client = docker_client()  # no daemon: the node is left out with this message
        self._scorer = DatasetScorer(root, client=self._client, concurrency=slots, warm=warm,
                                     max_open_tasks=max_open_tasks)
        self._slots = slots
        self._lock = threading.Lock()

    def info(self) -> str:
        return NodeInfo(host=socket.gethostname(), slots=self._slots, tasks=self._scorer.task_ids(),
                        images=self._images()).model_dump_json()

    def _images(self) -> list[str]:
        """Tasks whose image is built here: one image listing, then the content check only for names that
        match (a task's environment may have changed since its image was built)."""
        from repo2rlenv.validate import task_image_tag

        try:
            tags = {t for image in self._client.images.list(name="repo2rlenv-task") for t in image.tags}
        except Exception:  # noqa: BLE001 - a hint for routing, not needed to score
            return []
        names = {t.split(":")[0] for t in tags}
        by_name = {f"repo2rlenv-task/{task_id.lower()}": task_id for task_id in self._scorer.task_ids()}
        return sorted(task_id for name, task_id in by_name.items()
                      if name in names and task_image_tag(self._scorer.dataset.task(task_id)) in tags)

    def score(self, task_id: str, source: str | None) -> str:
        return self._scorer.score(task_id, source).model_dump_json()

    def score_group(self, task_id: str, sources: list[str | None]) -> list[str]:
        return [s.model_dump_json() for s in self._scorer.scorer(task_id).score_group(sources)]

    def warm_up(self, task_ids: list[str]) -> None:
        self._scorer.warm_up(task_ids)

    def pid(self) -> int:
        return os.getpid()

    def close(self) -> None:
        with self._lock:
            self._scorer.close()

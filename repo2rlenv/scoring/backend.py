"""The scorer behind an entry point (the service, the TRL and verl adapters): the local pool, or the nodes
of a Ray cluster when a `ray_address` is given. One place, so that every entry point reads the address the
same way.

    ray_address=None     the local `DatasetScorer` (this machine's Docker)
    ray_address="local"  a Ray cluster started here (or the Ray this process already runs, as in a trainer)
    ray_address="auto" | "HOST:PORT"   join that cluster; every node offering Docker scores
"""

from __future__ import annotations

from pathlib import Path

from repo2rlenv.scoring.cluster import RayDatasetScorer
from repo2rlenv.scoring.scorer import DEFAULT_CONCURRENCY, DatasetScorer


def open_scorer(dataset_dir: Path | str, *, ray_address: str | None = None, concurrency: int | None = None,
                warm: int = 1) -> DatasetScorer | RayDatasetScorer:
    """`concurrency`: scores at once (with Ray: per node; None: the node's resource amount)."""
    if ray_address is None:
        return DatasetScorer(dataset_dir, concurrency=concurrency or DEFAULT_CONCURRENCY, warm=warm)
    local = ray_address == "local"
    return RayDatasetScorer(dataset_dir, address=None if local else ray_address, concurrency=concurrency,
                            warm=warm, local_slots=concurrency or 2)

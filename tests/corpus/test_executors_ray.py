"""The corpus on a real local Ray cluster (started by the run, one repo slot): the same dataset as the
local executor's, also when the Ray worker running a repo is killed mid-repo (Ray runs it again and it
continues from the node's run folder), with no container of the lost worker left."""

from __future__ import annotations

import json
import os
import signal
import subprocess

from repo2rlenv.corpus.entries import read_repos_file
from repo2rlenv.dataset.manifest import read_manifest
from repo2rlenv.dataset.taskdir import DatasetPaths
from repo2rlenv.sandbox import owners
from repo2rlenv.sandbox.docker import LABEL, docker_client

from .conftest import corpus_command, tree_digest, wait_for


def _ray_task_workers() -> list[int]:
    res = subprocess.run(["pgrep", "-f", "^ray::run_remote"], capture_output=True, text=True)
    return [int(p) for p in res.stdout.split()]


def _node_run_folder_tasks(cache, name) -> list[str]:
    return [t for run in (cache / "corpus-runs").glob(f"*/{name}") for t in DatasetPaths(run).task_ids()]


def test_a_ray_corpus_survives_a_lost_worker(uninterrupted_corpus, corpus_list, tmp_path):
    out, cache = tmp_path / "dataset", tmp_path / "cache"
    minicart = read_repos_file(corpus_list)[1].name
    env = {**os.environ, "REPO2RLENV_CACHE": str(cache)}
    proc = subprocess.Popen(corpus_command(corpus_list, out, "--executor", "ray", "--workers", "1"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        wait_for(lambda: _node_run_folder_tasks(cache, minicart), 900, "minicart's first task on the node", proc)
        workers = _ray_task_workers()
        assert len(workers) == 1, workers
        os.kill(workers[0], signal.SIGKILL)
        _, err = proc.communicate(timeout=1500)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err[-4000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["executor"] == "ray"
    by_name = {r["name"]: r for r in summary["repos"]}
    assert by_name[minicart]["attempts"] == 2 and by_name[minicart]["status"] == "done"
    # The dataset equals the local executor's uninterrupted one: same ids, same bytes, no duplicates.
    assert tree_digest(out / "tasks") == tree_digest(uninterrupted_corpus / "tasks")
    rows = read_manifest(DatasetPaths(out).manifest)
    assert len(rows) == len({r.task_id for r in rows}) == 3
    assert (out / by_name[read_repos_file(corpus_list)[0].name]["log"]).is_file()  # logs came back from the node
    # No session container outlives its owner (the killed worker's went with it).
    client = docker_client()
    for c in client.containers.list(all=True, filters={"label": f"{LABEL}=session"}):
        assert owners.owner_alive((c.labels or {}).get(owners.OWNER_LABEL, "")), c.name

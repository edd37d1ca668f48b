"""Benchmark: what one score costs and how fast they come, through each way of scoring.

Same rollouts everywhere: every task of DATASET (the first `--tasks`) gets four — its oracle, an empty
submission, a test that asserts nothing useful, the oracle with its assertions removed — repeated `--rounds`
times. Each phase starts warm (images built, pools up: a one-off on every backend) and reports scores/min
and CPU-seconds per score:

- `local`: `DatasetScorer` in this process, `--concurrency` scores at once;
- `ray1`: `RayDatasetScorer` on a Ray cluster of one node with `--concurrency` slots;
- `ray2`: the same over two nodes of `--concurrency / 2` slots each (two raylets on this machine: the same
  parallelism as `ray1`, so the difference is Ray's overhead across nodes; more cores are needed to see
  scaling, which this machine cannot show);
- `service`: `repo2rlenv serve`'s server on loopback over a local `DatasetScorer`, hit by a burst of
  `--burst` concurrent requests that retry on 429 as told; client latency p50/p99 (first send to answer,
  waits included) and the server's own; waiting requests for one task graded in groups (the default);
- `service1`: the same with `group=1` (every request alone), for the ratio grouping buys;
- `harbor` (only with `--harbor`): one `harbor run -e podman` trial per rollout, for the ratio.

CPU-seconds per score: this process and every process under it (Ray's raylets, GCS and workers included)
plus the dataset's own scoring containers (their cpuacct cgroups, sampled while they live, so other Docker
work on the machine is not counted); dockerd and containerd, which start and remove every container but
serve any other Docker work at the same time too, are shown apart. Every backend's rewards are compared
with `local`'s.

    python3 scripts/bench_scoring.py DATASET [--concurrency 2] [--tasks 2] [--rounds 2] [--burst 64]
        [--phases local,ray1,ray2,service1,service] [--harbor] [--harbor-venv /opt/r2e-harbor]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from repo2rlenv.dataset.task_toml import TaskToml  # noqa: E402
from repo2rlenv.dataset.taskdir import DatasetPaths  # noqa: E402
from repo2rlenv.pipelines.test_synthesis.oracle.calls_only import calls_only  # noqa: E402
from repo2rlenv.scoring import DatasetScorer  # noqa: E402
from repo2rlenv.scoring.metrics import percentile  # noqa: E402

WEAK = "def test_nothing():\n    assert True\n"
RESOURCE = "repo2rlenv_docker"
DOCKER_CGROUP = Path("/sys/fs/cgroup/cpuacct/docker/cpuacct.usage")
TICK = os.sysconf("SC_CLK_TCK")


def rollouts(dataset: Path, n_tasks: int) -> list[tuple[str, str | None]]:
    data = DatasetPaths(dataset)
    out: list[tuple[str, str | None]] = []
    for task_id in data.task_ids()[:n_tasks]:
        oracle = next(data.task(task_id).solution.glob("test_*.py")).read_text()
        out += [(task_id, oracle), (task_id, None), (task_id, WEAK), (task_id, calls_only(oracle) or oracle)]
    return out


# -- CPU accounting ------------------------------------------------------------------------------------------

def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, CPU seconds of the process and its reaped children)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(fields[1]), sum(int(f) for f in fields[11:15]) / TICK


def tree_seconds() -> float:
    """CPU of this process and every process under it (Ray's raylets, GCS and workers included)."""
    stats = {int(p.name): s for p in Path("/proc").iterdir() if p.name.isdigit() and (s := _stat(int(p.name)))}
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in stats.items():
        children.setdefault(parent, []).append(pid)
    total, todo = 0.0, [os.getpid()]
    while todo:
        pid = todo.pop()
        total += stats.get(pid, (0, 0.0))[1]
        todo += children.get(pid, [])
    return total


def daemon_seconds() -> float:
    """dockerd and containerd: they start and remove every container, for whoever asks."""
    total = 0.0
    for name in ("dockerd", "containerd"):
        res = subprocess.run(["pgrep", "-x", name], capture_output=True, text=True)
        total += sum(s[1] for p in res.stdout.split() if (s := _stat(int(p))))
    return total


class ContainerMeter:
    """CPU of this dataset's scoring containers only, though other work shares the daemon: each container's
    cpuacct cgroup is sampled while it lives (every 50 ms; a container's last moments are missed, so this
    undercounts by a little), and only containers of the dataset's task images count."""

    def __init__(self, dataset: Path):
        from repo2rlenv.sandbox.docker import docker_client

        self._client = docker_client()
        self._images = {f"repo2rlenv-task/{t.lower()}" for t in DatasetPaths(dataset).task_ids()}
        self._ours: dict[str, bool] = {}
        self._usage: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _mine(self, cid: str) -> bool:
        if cid not in self._ours:
            try:
                image = self._client.api.inspect_container(cid)["Config"]["Image"]
                self._ours[cid] = image.split(":")[0] in self._images
            except Exception:  # gone already: too short to matter, or not ours
                self._ours[cid] = False
        return self._ours[cid]

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            for group in DOCKER_CGROUP.parent.iterdir():
                if group.is_dir() and self._mine(group.name):
                    try:
                        self._usage[group.name] = int((group / "cpuacct.usage").read_text())
                    except (OSError, ValueError):
                        pass

    def __enter__(self) -> "ContainerMeter":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def seconds(self) -> float:
        return sum(self._usage.values()) / 1e9


@dataclass
class Phase:
    name: str
    scores: int
    wall: float
    cpu: float  # this process tree and the dataset's containers
    daemons: float  # dockerd + containerd over the same time (shared with any other Docker work)
    agree: str = ""
    note: str = ""

    def line(self) -> str:
        n = self.scores
        return (f"{self.name:<8} {n:>4} scores {self.wall:7.1f}s {n / self.wall * 60:7.1f}/min  "
                f"{self.cpu / n:5.2f} CPU-s/score (+{self.daemons / n:4.2f} dockerd)  {self.agree}  {self.note}")


def measure(name: str, dataset: Path, run, n: int) -> tuple[Phase, list]:
    with ContainerMeter(dataset) as containers:
        tree0, daemons0, t0 = tree_seconds(), daemon_seconds(), time.monotonic()
        scores = run()
        wall, tree, daemons = time.monotonic() - t0, tree_seconds() - tree0, daemon_seconds() - daemons0
    return Phase(name, n, wall, tree + containers.seconds(), daemons), scores


def agreement(scores: list, reference: list[float | None]) -> str:
    same = sum(1 for s, r in zip(scores, reference) if s.reward == r)
    return f"rewards as local: {same}/{len(reference)}"


# -- phases --------------------------------------------------------------------------------------------------

def phase_local(dataset: Path, items, concurrency: int) -> tuple[Phase, list]:
    with DatasetScorer(dataset, concurrency=concurrency, warm=concurrency) as scorer:
        scorer.warm_up(dict.fromkeys(t for t, _ in items))
        return measure("local", dataset, lambda: scorer.score_many(items), len(items))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def phase_ray(dataset: Path, items, name: str, slots_per_node: list[int]) -> tuple[Phase, list]:
    from ray.cluster_utils import Cluster

    from repo2rlenv.scoring import RayDatasetScorer

    node = {"num_cpus": 1, "object_store_memory": 80 * 1024 * 1024}
    start = time.monotonic()
    cluster = Cluster(initialize_head=True, head_node_args={**node, "resources": {RESOURCE: slots_per_node[0]},
                                                            "gcs_server_port": _free_port(),
                                                            "include_dashboard": False})
    try:
        for slots in slots_per_node[1:]:
            cluster.add_node(**node, resources={RESOURCE: slots})
        cluster.wait_for_nodes()
        with RayDatasetScorer(dataset, address=cluster.address, warm=max(slots_per_node)) as scorer:
            scorer.warm_up(dict.fromkeys(t for t, _ in items))
            up = time.monotonic() - start
            phase, scores = measure(name, dataset, lambda: scorer.score_many(items), len(items))
            served = sorted(n.served for n in scorer.nodes())
        phase.note = f"(cluster up and warm in {up:.0f}s; scores per node {served})"
        return phase, scores
    finally:
        cluster.shutdown()


def phase_service(dataset: Path, items, concurrency: int, burst: int, group: int, name: str) -> tuple[Phase, list]:
    from repo2rlenv.scoring.server import make_server
    from repo2rlenv.scoring.service import ScoringService, ServiceLimits

    requests = [items[i % len(items)] for i in range(burst)]
    scorer = DatasetScorer(dataset, concurrency=concurrency, warm=concurrency)
    scorer.warm_up(dict.fromkeys(t for t, _ in items))
    service = ScoringService(scorer, ServiceLimits(concurrency=concurrency, group=group))
    server = make_server(service, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    host, port = server.server_address[:2]
    latencies: list[float] = []
    rejected = [0]
    lock = threading.Lock()

    def one(pair):
        body = json.dumps({"task_id": pair[0], "source": pair[1]}).encode()
        first = time.monotonic()
        while True:
            conn = http.client.HTTPConnection(host, port, timeout=900)
            try:
                conn.request("POST", "/score", body, {"Content-Type": "application/json"})
                resp = conn.getresponse()
                data, retry = resp.read(), resp.getheader("Retry-After")
            finally:
                conn.close()
            if resp.status == 429:
                with lock:
                    rejected[0] += 1
                time.sleep(int(retry or 1))
                continue
            with lock:
                latencies.append(time.monotonic() - first)
            from repo2rlenv.scoring import Score

            return Score.model_validate_json(data)

    try:
        with ThreadPoolExecutor(max_workers=burst) as clients:
            phase, scores = measure(name, dataset, lambda: list(clients.map(one, requests)), burst)
        snap = service.snapshot()
    finally:
        server.shutdown()
        server.close()
    values = sorted(latencies)
    phase.note = (f"(burst of {burst}: client p50 {percentile(values, 0.5):.1f}s p99 {percentile(values, 0.99):.1f}s, "
                  f"{rejected[0]} answers 429; server p50 {snap.latency_sec.p50:.1f}s p99 {snap.latency_sec.p99:.1f}s; "
                  f"gradings by group size {snap.group_sizes})")
    return phase, scores


# -- Harbor, for the ratio -----------------------------------------------------------------------------------

def harbor_tasks(dataset: Path, items: list[tuple[str, str | None]], dest: Path) -> list[str]:
    """One task copy per rollout, its solve.sh writing that rollout's file; returns the copies' names."""
    data = DatasetPaths(dataset)
    names = []
    for i, (task_id, source) in enumerate(items):
        name = f"{task_id}-r{i}"
        copy = dest / name
        shutil.copytree(data.task(task_id).root, copy, symlinks=True)
        toml = (copy / "task.toml").read_text()
        (copy / "task.toml").write_text(toml.replace(f'name = "repo2rlenv/{task_id}"', f'name = "repo2rlenv/{name}"'))
        test_path = TaskToml.from_toml(toml).metadata.repo2env.test_synthesis.test_path
        script = "#!/bin/bash\nset -euo pipefail\n"
        if source is not None:
            script += (f'mkdir -p "$(dirname /workspace/{test_path})"\n'
                       f"cat > /workspace/{test_path} <<'R2E_BENCH_EOF'\n{source}R2E_BENCH_EOF\n")
        (copy / "solution" / "solve.sh").write_text(script)
        names.append(name)
    return names


def run_harbor(tasks_dir: Path, venv: Path, concurrency: int, jobs: Path) -> dict[str, float | None]:
    env = {**os.environ, "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
           "LITELLM_LOCAL_MODEL_COST_MAP": "True", "VIRTUAL_ENV": str(venv)}
    proc = subprocess.run([str(venv / "bin" / "harbor"), "run", "-p", str(tasks_dir), "-a", "oracle", "-e", "podman",
                           "-o", str(jobs), "--job-name", "bench", "-n", str(concurrency), "-y"],
                          env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"harbor run failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    rewards: dict[str, float | None] = {}
    for result in (jobs / "bench").glob("*/result.json"):
        trial = json.loads(result.read_text())
        name = trial.get("task_name") or trial["trial_name"].rsplit("__", 1)[0]
        verdict = (trial.get("verifier_result") or {}).get("rewards") or {}
        rewards[name.split("/")[-1]] = verdict.get("reward")
    return rewards


def phase_harbor(dataset: Path, items, concurrency: int, venv: Path, reference) -> Phase:
    with tempfile.TemporaryDirectory(prefix="r2e-bench-harbor-") as tmp:
        tasks_dir, jobs = Path(tmp) / "tasks", Path(tmp) / "jobs"
        tasks_dir.mkdir()
        names = harbor_tasks(dataset, items, tasks_dir)
        tree0, daemons0, t0 = tree_seconds(), daemon_seconds(), time.monotonic()
        harbor = run_harbor(tasks_dir, venv, concurrency, jobs)
        phase = Phase("harbor", len(items), time.monotonic() - t0, tree_seconds() - tree0,
                      daemon_seconds() - daemons0)
    same = sum(1 for name, r in zip(names, reference) if harbor.get(name) == r)
    phase.agree = f"rewards as local: {same}/{len(items)}"
    phase.note = "(CPU: harbor's processes and podman's containers, when they run under this process)"
    return phase


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--concurrency", type=int, default=2, help="scores at once, in every phase (ray2: split)")
    parser.add_argument("--tasks", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2, help="times each task's four rollouts are scored")
    parser.add_argument("--burst", type=int, default=64)
    parser.add_argument("--phases", default="local,ray1,ray2,service1,service")
    parser.add_argument("--harbor", action="store_true", help="also one Harbor trial per rollout (slow)")
    parser.add_argument("--harbor-venv", type=Path, default=Path(os.environ.get("R2E_HARBOR_VENV", "/opt/r2e-harbor")))
    args = parser.parse_args(argv)
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    base = rollouts(args.dataset, args.tasks)
    items = base * args.rounds
    phases = [p.strip() for p in args.phases.split(",") if p.strip()]
    if args.concurrency < 2 and "ray2" in phases:
        raise SystemExit("ray2 splits --concurrency over two nodes: give at least 2")

    # The reference rewards: local's, measured first whether or not its phase is shown.
    results: list[Phase] = []
    local, scores = phase_local(args.dataset, items, args.concurrency)
    reference = [s.reward for s in scores]
    local.agree = f"infra failures: {sum(1 for s in scores if s.reward is None)}"
    if "local" in phases:
        results.append(local)
    half = args.concurrency // 2
    runs = {"ray1": lambda: phase_ray(args.dataset, items, "ray1", [args.concurrency]),
            "ray2": lambda: phase_ray(args.dataset, items, "ray2", [half, args.concurrency - half]),
            "service1": lambda: phase_service(args.dataset, items, args.concurrency, args.burst, 1, "service1"),
            "service": lambda: phase_service(args.dataset, items, args.concurrency, args.burst, 8, "service")}
    for name in phases:
        if name in runs:
            phase, scores = runs[name]()
            expected = reference if not name.startswith("service") else [reference[i % len(items)] for i in range(args.burst)]
            phase.agree = agreement(scores, expected)
            results.append(phase)
            print(phase.line(), flush=True)
    if args.harbor:
        results.append(phase_harbor(args.dataset, base, args.concurrency, args.harbor_venv, reference[:len(base)]))

    print(f"\n{len(base)} rollouts x {args.rounds} rounds over {args.tasks} tasks, concurrency {args.concurrency}, "
          f"{os.cpu_count()} cores")
    for phase in results:
        print(phase.line())
    return 0 if all(p.agree.endswith(f"{p.scores}/{p.scores}") or p.name == "local" for p in results) else 1


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark: scores per minute through `TaskScorer`'s warm pool against one Harbor trial per rollout.

Same submissions, same machine, one run. Every task of DATASET gets four rollouts (its oracle, an empty
submission, a test that asserts nothing useful, the oracle with its assertions removed). Harbor side: each
rollout is a copy of its task whose solve.sh writes that submission, run with Harbor's oracle agent
(`harbor run -e podman -n CONCURRENCY`) — one whole trial per rollout: environment check/build, agent
container, a fresh verifier container. Scorer side: `DatasetScorer.score_many` with the same concurrency.
Prints both throughputs, their ratio, and whether every rollout got the same reward both ways.

    python3 scripts/bench_scoring.py DATASET [--concurrency 2] [--tasks 2] [--harbor-venv /opt/r2e-harbor]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from repo2rlenv.dataset.task_toml import TaskToml  # noqa: E402
from repo2rlenv.dataset.taskdir import DatasetPaths  # noqa: E402
from repo2rlenv.pipelines.test_synthesis.oracle.calls_only import calls_only  # noqa: E402
from repo2rlenv.scoring import DatasetScorer  # noqa: E402

WEAK = "def test_nothing():\n    assert True\n"


def rollouts(dataset: Path, n_tasks: int) -> list[tuple[str, str | None]]:
    data = DatasetPaths(dataset)
    out: list[tuple[str, str | None]] = []
    for task_id in data.task_ids()[:n_tasks]:
        oracle = next(data.task(task_id).solution.glob("test_*.py")).read_text()
        out += [(task_id, oracle), (task_id, None), (task_id, WEAK), (task_id, calls_only(oracle) or oracle)]
    return out


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--tasks", type=int, default=2)
    parser.add_argument("--harbor-venv", type=Path, default=Path(os.environ.get("R2E_HARBOR_VENV", "/opt/r2e-harbor")))
    args = parser.parse_args(argv)
    items = rollouts(args.dataset, args.tasks)

    with DatasetScorer(args.dataset, concurrency=args.concurrency, warm=args.concurrency) as scorer:
        for task_id in dict.fromkeys(t for t, _ in items):
            scorer.scorer(task_id).warm_up()  # image builds are a one-off on both sides; Harbor's are cached too
        start = time.monotonic()
        scores = scorer.score_many(items)
        ours = time.monotonic() - start

    with tempfile.TemporaryDirectory(prefix="r2e-bench-harbor-") as tmp:
        tasks_dir, jobs = Path(tmp) / "tasks", Path(tmp) / "jobs"
        tasks_dir.mkdir()
        names = harbor_tasks(args.dataset, items, tasks_dir)
        start = time.monotonic()
        harbor = run_harbor(tasks_dir, args.harbor_venv, args.concurrency, jobs)
        theirs = time.monotonic() - start

    same = [harbor.get(name) == score.reward for name, score in zip(names, scores)]
    print(f"{'rollout':<44} {'scorer':>7} {'harbor':>7}")
    for name, score in zip(names, scores):
        print(f"{name:<44} {score.reward!s:>7} {harbor.get(name)!s:>7}")
    rate_ours, rate_theirs = len(items) / ours * 60, len(items) / theirs * 60
    print(f"\nTaskScorer warm pool: {len(items)} scores in {ours:.1f}s = {rate_ours:.1f}/min")
    print(f"Harbor trial per rollout: {len(items)} trials in {theirs:.1f}s = {rate_theirs:.1f}/min")
    print(f"ratio: {rate_ours / rate_theirs:.1f}x   identical rewards: {sum(same)} of {len(items)}")
    return 0 if all(same) else 1


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark: tasks per hour of a corpus run with 1 and with 2 Ray workers, same list, same machine, one run.

Both runs start from the same warm state: a warm-up pass (`doctor` per repo, in a shared cache) builds
every repo's sandbox image and caches its baseline first, so neither run pays for what the other built.
Each run then writes a fresh dataset (`generate --repos LIST --executor ray --workers N`) with its own
copy of the warm cache. Prints tasks/hour for each, their ratio, whether both datasets hold the same task
ids, and the driver's own overhead per task (summary.json's `driver_sec`: publishing, manifest, journal).

    python3 scripts/bench_corpus.py [LIST] [--workers 1 2] [--keep DIR]

LIST defaults to examples/corpus.txt (the two bundled examples).
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

from repo2rlenv.corpus.entries import read_repos_file  # noqa: E402


def _cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "repo2rlenv", *args], capture_output=True, text=True, env=env)


def warm_up(listing: Path, cache: Path, scratch: Path) -> None:
    env = {**os.environ, "REPO2RLENV_CACHE": str(cache)}
    for entry in read_repos_file(listing):
        args = ["doctor", "--repo", entry.spec, "--out", str(scratch / entry.name)]
        if entry.ref:
            args += ["--ref", entry.ref]
        res = _cli(args, env)
        print(f"warm-up {entry.spec}: exit {res.returncode}", flush=True)


def one_run(listing: Path, workers: int, warm_cache: Path, work: Path) -> dict:
    cache, out = work / f"cache-{workers}", work / f"dataset-{workers}"
    shutil.copytree(warm_cache, cache, symlinks=True)
    env = {**os.environ, "REPO2RLENV_CACHE": str(cache)}
    start = time.monotonic()
    res = _cli(["generate", "--repos", str(listing), "--out", str(out), "--executor", "ray",
                "--workers", str(workers)], env)
    wall = time.monotonic() - start
    if res.returncode != 0:
        print(res.stderr[-3000:], file=sys.stderr)
        raise SystemExit(f"the run with {workers} workers failed (exit {res.returncode})")
    summary = json.loads((out / "summary.json").read_text())
    tasks = sorted(t for r in summary["repos"] for t in r["emitted"])
    return {"workers": workers, "wall_sec": wall, "tasks": tasks, "driver_sec": summary["driver_sec"],
            "per_hour": len(tasks) / wall * 3600}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("listing", nargs="?", type=Path, default=ROOT / "examples" / "corpus.txt")
    ap.add_argument("--workers", type=int, nargs=2, default=[1, 2])
    ap.add_argument("--keep", type=Path, default=None, help="Keep the datasets here instead of a temp dir.")
    args = ap.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="r2e-bench-corpus-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        warm = work / "warm-cache"
        warm_up(args.listing, warm, work / "doctor")
        runs = [one_run(args.listing, n, warm, work) for n in args.workers]
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    for r in runs:
        per_task = r["driver_sec"] / max(1, len(r["tasks"]))
        print(f"{r['workers']} worker(s): {len(r['tasks'])} tasks in {r['wall_sec']:.1f}s = {r['per_hour']:.1f} tasks/hour; "
              f"driver overhead {r['driver_sec']:.2f}s ({per_task:.3f}s per task)")
    a, b = runs
    print(f"ratio ({b['workers']} vs {a['workers']} workers): {b['per_hour'] / a['per_hour']:.2f}x; "
          f"same task ids: {a['tasks'] == b['tasks']}")


if __name__ == "__main__":
    main()

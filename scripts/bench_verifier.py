"""Benchmark: the in-task verifier's wall time against one bare pytest run of the same submission.

Both run in the same task image and container, alternating, N rounds each; the script prints the
medians and their ratio (the verifier runs A, A′ and B, so ~3x is the naive expectation; issue 6's
target is <= 1.5x).

    python3 scripts/bench_verifier.py TASK_DIR [--rounds 5]
    python3 scripts/bench_verifier.py --generate  [--rounds 5]   # makes a task from examples/minicart first
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from repo2rlenv.sandbox.base import Limits  # noqa: E402
from repo2rlenv.sandbox.docker import DockerSession, docker_client  # noqa: E402
from repo2rlenv.taskdir import DatasetPaths, TaskPaths  # noqa: E402
from repo2rlenv.validate import TaskRunner, build_task_image  # noqa: E402


def _generated_task() -> Path:
    out = Path(tempfile.mkdtemp(prefix="r2e-bench-")) / "ds"
    subprocess.run([sys.executable, "-m", "repo2rlenv", "generate", "--repo", str(ROOT / "examples" / "minicart"),
                    "--pipeline-opt", "strategy=mutation", "--pipeline-opt", "limit=1", "--sandbox", "docker",
                    "--no-validate", "--out", str(out)], check=True)
    return DatasetPaths(out).task(DatasetPaths(out).task_ids()[0]).root


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task", nargs="?", type=Path)
    parser.add_argument("--generate", action="store_true")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    if not args.task and not args.generate:
        parser.error("give a TASK_DIR or --generate")
    task = TaskPaths(args.task or _generated_task())
    client = docker_client()
    image = build_task_image(client, task)
    runner = TaskRunner(client, task, image, Limits(timeout_sec=900, memory_mb=4096, cpus=2.0, pids=1024))
    bare_times, verifier_times = [], []
    with DockerSession(client, image, runner.limits, harden=False) as session:
        runner.solve_with_oracle(session)
        files = {f"/tests/{p.relative_to(task.tests).as_posix()}": p.read_bytes()
                 for p in task.tests.rglob("*") if p.is_file()}
        session.write_files(files)
        bare = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider", runner.test_path]
        for _ in range(args.rounds):
            start = time.monotonic()
            res = session.exec(bare, cwd="/workspace", timeout=600)
            bare_times.append(time.monotonic() - start)
            assert res.exit_code == 0, res.tail()
            start = time.monotonic()
            session.exec(["bash", "/tests/test.sh"], timeout=900)
            verifier_times.append(time.monotonic() - start)
            reward = (session.read_file("/logs/verifier/reward.txt") or b"?").decode().strip()
            assert reward == "1.0", f"oracle scored {reward}"
    b, v = statistics.median(bare_times), statistics.median(verifier_times)
    print(f"task: {task.root.name}  rounds: {args.rounds}")
    print(f"bare pytest of the submission : median {b:.2f}s  ({', '.join(f'{t:.2f}' for t in bare_times)})")
    print(f"tests/test.sh (full grading)  : median {v:.2f}s  ({', '.join(f'{t:.2f}' for t in verifier_times)})")
    print(f"ratio verifier / bare pytest  : {v / b:.2f}x   (target <= 1.5x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

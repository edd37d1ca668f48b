"""Benchmark: the in-task verifier's wall time against one bare pytest run of the same submission.

Both run in the same task image and container, alternating, N rounds each; the script prints the
medians and their ratio (the verifier runs A, A′ and B, so ~3x is the naive expectation; issue 6's
target is <= 1.5x). Each command runs under `bash -c '…; times'`, which also gives the CPU time it and
its children used: on a busy machine the wall ratio drifts towards the CPU ratio. The last line breaks
the verifier's own time down by stage (from reward-details.json, medians over the rounds).

    python3 scripts/bench_verifier.py TASK_DIR [TASK_DIR …] [--rounds 5]
    python3 scripts/bench_verifier.py --generate  [--rounds 5]   # makes a task from examples/minicart first
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
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

# bash's `times`: the shell's user/sys, then its children's, e.g. "0m0.004s 0m0.001s\n0m0.281s 0m0.037s".
TIMES = re.compile(r"(\d+)m([\d.]+)s (\d+)m([\d.]+)s\s*$")


def _generated_task() -> Path:
    out = Path(tempfile.mkdtemp(prefix="r2e-bench-")) / "ds"
    subprocess.run([sys.executable, "-m", "repo2rlenv", "generate", "--repo", str(ROOT / "examples" / "minicart"),
                    "--pipeline-opt", "strategy=mutation", "--pipeline-opt", "limit=1", "--sandbox", "docker",
                    "--no-validate", "--out", str(out)], check=True)
    return DatasetPaths(out).task(DatasetPaths(out).task_ids()[0]).root


def _timed(session: DockerSession, argv: list[str], cwd: str | None) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds of the command and its children, exit code)."""
    script = f"{shlex.join(argv)} >/dev/null 2>&1; code=$?; times; exit $code"
    start = time.monotonic()
    res = session.exec(["bash", "-c", script], cwd=cwd, timeout=900)
    wall = time.monotonic() - start
    match = TIMES.search(res.stdout.strip())
    cpu = (int(match[1]) * 60 + float(match[2]) + int(match[3]) * 60 + float(match[4])) if match else float("nan")
    return wall, cpu, res.exit_code


def _median_stages(details: list[dict]) -> str:
    stages: dict[str, list[float]] = {}
    for d in details:
        timings = d.get("timings", {})
        for key in ("lint", "prepare", "total"):
            stages.setdefault(key, []).append(timings.get(key, float("nan")))
        for name, seconds in timings.get("runs", {}).items():
            stages.setdefault(f"run {name}", []).append(seconds)
    return ", ".join(f"{k} {statistics.median(v):.3f}s" for k, v in stages.items())


def bench(task: TaskPaths, rounds: int) -> None:
    """Alternate a bare pytest run and a full grading of the task's oracle, `rounds` times; print medians."""
    client = docker_client()
    image = build_task_image(client, task)
    runner = TaskRunner(client, task, image, Limits(timeout_sec=900, memory_mb=4096, cpus=2.0, pids=1024))
    bare_times, verifier_times, bare_cpu, verifier_cpu, details = [], [], [], [], []
    with DockerSession(client, image, runner.limits, harden=False) as session:
        runner.solve_with_oracle(session)
        files = {f"/tests/{p.relative_to(task.tests).as_posix()}": p.read_bytes()
                 for p in task.tests.rglob("*") if p.is_file()}
        session.write_files(files)
        bare = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider", runner.test_path]
        for _ in range(rounds):
            wall, cpu, code = _timed(session, bare, "/workspace")
            assert code == 0, f"bare pytest exited {code}"
            bare_times.append(wall)
            bare_cpu.append(cpu)
            wall, cpu, _ = _timed(session, ["bash", "/tests/test.sh"], None)
            verifier_times.append(wall)
            verifier_cpu.append(cpu)
            reward = (session.read_file("/logs/verifier/reward.txt") or b"?").decode().strip()
            assert reward == "1.0", f"oracle scored {reward}"
            details.append(json.loads(session.read_file("/logs/verifier/reward-details.json") or b"{}"))
    b, v = statistics.median(bare_times), statistics.median(verifier_times)
    bc, vc = statistics.median(bare_cpu), statistics.median(verifier_cpu)
    print(f"task: {task.root.name}  rounds: {rounds}  runs started by: "
          f"{', '.join(sorted({d.get('runner', {}).get('via', '?') for d in details}))}")
    print(f"bare pytest of the submission : median {b:.2f}s  ({', '.join(f'{t:.2f}' for t in bare_times)})")
    print(f"tests/test.sh (full grading)  : median {v:.2f}s  ({', '.join(f'{t:.2f}' for t in verifier_times)})")
    print(f"ratio verifier / bare pytest  : {v / b:.2f}x   (target <= 1.5x)")
    print(f"CPU seconds, bare / verifier  : {bc:.2f} / {vc:.2f}  (ratio {vc / bc:.2f}x)")
    print(f"verifier stages (median)      : {_median_stages(details)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tasks", nargs="*", type=Path, metavar="TASK_DIR")
    parser.add_argument("--generate", action="store_true")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    if not args.tasks and not args.generate:
        parser.error("give TASK_DIRs or --generate")
    for path in [*args.tasks, *([_generated_task()] if args.generate else [])]:
        bench(TaskPaths(path), args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())

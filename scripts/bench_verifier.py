"""Benchmark: the in-task verifier's wall time against one bare pytest run of the same submission.

Both run in the same task image and container, alternating, N rounds each; the script prints the
medians, their ratio, and the cost of each graded run after the first as a fraction of a bare run
(the verifier runs A, then its rewrites A′ and B's rewrites B′ together; issue 13's target: each graded
run after the first costs <= 0.25 x a bare pytest run). Each command runs under `bash -c '…; times'`, which also gives the CPU time it and
its children used: on a busy machine the wall ratio drifts towards the CPU ratio. The last line breaks
the verifier's own time down by stage (from reward-details.json, medians over the rounds). The verifier
graded is always this checkout's (written over the task's own). With
`--baseline-ref REF`, the verifier as committed at REF grades in the same rounds too (from /tests_ref),
so an older and the current verifier are compared side by side on the same noisy machine.

    python3 scripts/bench_verifier.py TASK_DIR [TASK_DIR …] [--rounds 5] [--baseline-ref REF] [--group 8]
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
VERIFIER_PATH = "repo2rlenv/verifiers/test_synthesis"
sys.path.insert(0, str(ROOT))

from repo2rlenv.sandbox.base import Limits  # noqa: E402
from repo2rlenv.sandbox.docker import DockerSession, docker_client  # noqa: E402
from repo2rlenv.dataset.taskdir import DatasetPaths, TaskPaths  # noqa: E402
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
        cpu = timings.get("run_cpu", {})
        if cpu:
            stages.setdefault("cpu of A", []).append(cpu.get("A", float("nan")))
            others = [v for k, v in cpu.items() if k != "A"]
            stages.setdefault("cpu of each other run", []).append(statistics.mean(others) if others else float("nan"))
    return ", ".join(f"{k} {statistics.median(v):.3f}s" for k, v in stages.items())


def _verifier_at(ref: str) -> dict[str, bytes]:
    """The verifier (its modules and test.sh) as committed at `ref`, by file name."""
    def show(path: str) -> bytes:
        return subprocess.run(["git", "-C", str(ROOT), "show", f"{ref}:{path}"], capture_output=True,
                              check=True).stdout

    names = subprocess.run(["git", "-C", str(ROOT), "ls-tree", "--name-only", f"{ref}:{VERIFIER_PATH}"],
                           capture_output=True, text=True, check=True).stdout.split()
    files = {n: show(f"{VERIFIER_PATH}/{n}") for n in names if n.startswith("verifier") and n.endswith(".py")}
    files["test.sh"] = show("repo2rlenv/harbor_templates/test.sh").replace(b"/tests/", b"/tests_ref/")
    return files


def bench(task: TaskPaths, rounds: int, baseline_ref: str | None = None, group: int = 0) -> None:
    """Alternate a bare pytest run and a full grading of the task's oracle (and, given `baseline_ref`,
    a grading by the verifier of that commit, from /tests_ref; given `group`, `group` gradings of the
    oracle by one verifier, `test.sh --batch`), `rounds` times; print medians."""
    client = docker_client()
    image = build_task_image(client, task)
    runner = TaskRunner(client, task, image, Limits(timeout_sec=900, memory_mb=4096, cpus=2.0, pids=1024))
    bare_times, verifier_times, ref_times, bare_cpu, verifier_cpu, ref_cpu, details = [], [], [], [], [], [], []
    group_cpu: list[float] = []
    with DockerSession(client, image, runner.limits, harden=False) as session:
        runner.solve_with_oracle(session)
        files = {f"/tests/{p.relative_to(task.tests).as_posix()}": p.read_bytes()
                 for p in task.tests.rglob("*") if p.is_file()}
        # The verifier graded is this checkout's, whenever the task was made.
        files.update({f"/tests/{p.name}": p.read_bytes() for p in (ROOT / VERIFIER_PATH).glob("verifier*.py")})
        files["/tests/test.sh"] = (ROOT / "repo2rlenv" / "harbor_templates" / "test.sh").read_bytes()
        session.write_files(files)
        if baseline_ref:
            ref_files = {k.replace("/tests/", "/tests_ref/", 1): v for k, v in files.items()
                         if not Path(k).name.startswith("verifier") or not k.endswith(".py")}
            ref_files.update({f"/tests_ref/{name}": data for name, data in _verifier_at(baseline_ref).items()})
            session.write_files(ref_files)
        bare = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider", runner.test_path]
        for _ in range(rounds):
            wall, cpu, code = _timed(session, bare, "/workspace")
            assert code == 0, f"bare pytest exited {code}"
            bare_times.append(wall)
            bare_cpu.append(cpu)
            if baseline_ref:
                wall, cpu, _ = _timed(session, ["bash", "/tests_ref/test.sh"], None)
                ref_times.append(wall)
                ref_cpu.append(cpu)
                reward = (session.read_file("/logs/verifier/reward.txt") or b"?").decode().strip()
                assert reward == "1.0", f"oracle scored {reward} under {baseline_ref}'s verifier"
            wall, cpu, _ = _timed(session, ["bash", "/tests/test.sh"], None)
            verifier_times.append(wall)
            verifier_cpu.append(cpu)
            reward = (session.read_file("/logs/verifier/reward.txt") or b"?").decode().strip()
            assert reward == "1.0", f"oracle scored {reward}"
            details.append(json.loads(session.read_file("/logs/verifier/reward-details.json") or b"{}"))
            if group:
                group_cpu.append(_group_cpu(session, runner.test_path, group))
    b, v = statistics.median(bare_times), statistics.median(verifier_times)
    bc, vc = statistics.median(bare_cpu), statistics.median(verifier_cpu)
    print(f"task: {task.root.name}  rounds: {rounds}  runs started by: "
          f"{', '.join(sorted({d.get('runner', {}).get('via', '?') for d in details}))}")
    print(f"bare pytest of the submission : median {b:.2f}s  ({', '.join(f'{t:.2f}' for t in bare_times)})")
    print(f"tests/test.sh (full grading)  : median {v:.2f}s  ({', '.join(f'{t:.2f}' for t in verifier_times)})")
    runs = statistics.median([sum(1 for r in d.get("variants", []) if r.get("status") != "not_run") for d in details])
    print(f"ratio verifier / bare pytest  : {v / b:.2f}x   over {runs:.0f} graded runs: {v / (b * runs):.2f}x bare x runs")
    print(f"each graded run after the 1st : {(v - b) / max(1, runs - 1) / b:.3f} x a bare run   (target <= 0.25)")
    print(f"CPU seconds, bare / verifier  : {bc:.2f} / {vc:.2f}  (ratio {vc / bc:.2f}x)")
    print(f"verifier stages (median)      : {_median_stages(details)}")
    # What the runs themselves used (each run's own rusage, the test file's work included) against the rest:
    # the verifier process, the zygote's start, lint, twins and copies. Only the rest is the verifier's
    # alone to cut; the runs' part grows with what the submission's tests do.
    in_runs = statistics.median([sum(d.get("timings", {}).get("run_cpu", {}).values()) for d in details])
    print(f"CPU seconds inside the runs   : {in_runs:.2f} per grading; outside them: {vc - in_runs:.2f} alone")
    if group:
        g = statistics.median(group_cpu)
        print(f"CPU seconds per grading in a group of {group} (one verifier, test.sh --batch): {g:.2f}  "
              f"(alone {vc:.2f}; group / alone: {g / vc:.2f}; outside the runs: {g - in_runs:.2f})")
    if baseline_ref:
        r = statistics.median(ref_times)
        rc = statistics.median(ref_cpu)
        print(f"verifier at {baseline_ref[:12]:<12}      : median {r:.2f}s  ({r / b:.2f}x bare); "
              f"this checkout / it: {v / r:.2f}")
        print(f"CPU seconds per grading       : this checkout {vc:.2f}, at {baseline_ref[:12]} {rc:.2f}  "
              f"(this / it: {vc / rc:.2f})")


def _group_cpu(session: DockerSession, test_path: str, group: int) -> float:
    """CPU seconds per grading when `group` copies of the oracle (at /workspace/`test_path`) are graded by
    one verifier; each must score 1.0."""
    oracle = session.read_file(f"/workspace/{test_path}")
    items = [{"name": str(k), "source": f"{k}.py"} for k in range(group)]
    session.write_files({"/tests/batch/items.json": json.dumps(items).encode(),
                         **{f"/tests/batch/{k}.py": oracle for k in range(group)}})
    _, cpu, _ = _timed(session, ["bash", "/tests/test.sh", "--batch", "/tests/batch"], None)
    rewards = [(session.read_file(f"/logs/verifier/{k}/reward.txt") or b"?").decode().strip() for k in range(group)]
    assert rewards == ["1.0"] * group, f"the oracle scored {rewards} in a group"
    session.write_files({f"/workspace/{test_path}": oracle})  # the group leaves the last item's file there
    return cpu / group


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tasks", nargs="*", type=Path, metavar="TASK_DIR")
    parser.add_argument("--generate", action="store_true")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--baseline-ref", metavar="REF", help="also time the verifier as committed at REF")
    parser.add_argument("--group", type=int, default=0, metavar="K",
                        help="also grade K copies of the oracle with one verifier (what score_many does)")
    args = parser.parse_args()
    if not args.tasks and not args.generate:
        parser.error("give TASK_DIRs or --generate")
    for path in [*args.tasks, *([_generated_task()] if args.generate else [])]:
        bench(TaskPaths(path), args.rounds, args.baseline_ref, args.group)
    return 0


if __name__ == "__main__":
    sys.exit(main())

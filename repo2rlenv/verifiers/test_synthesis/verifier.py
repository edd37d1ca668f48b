"""The in-task verifier of a test_synthesis task: grade the agent's test file, write the reward.

Harbor copies the task's `tests/` to `/tests` after the agent finishes and runs `test.sh`, which runs
    python verifier.py --config /tests/verifier_config.json --workspace /workspace --logs /logs/verifier
The verifier always writes `reward.txt` (one float) and `reward-details.json` (the breakdown), last and
atomically; any failure is a reward of 0 and a reason. The reward itself is described in
`verifier_grade`, which does the grading.

This entry point exists for speed: the runs' warm zygote imports pytest and coverage, the longest step
before the first run, so it is started (`verifier_layout.Scratch`) before this process imports the rest
of the verifier, and the two imports overlap on the machine's cores. Keep this file's own imports to
what that start needs.

Stdlib + pytest + coverage only; copied verbatim into every task. `score()` is the Python API, `main()`
the CLI. Other names (`compute_reward`, `read_config` …) are `verifier_grade`'s, reachable from here.
"""

from __future__ import annotations

import importlib
import os
import random
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

try:
    from . import verifier_layout as vlayout
except ImportError:  # run as a script from /tests: the modules are plain siblings
    import verifier_layout as vlayout  # type: ignore[no-redef]


def _sibling(name: str) -> ModuleType:
    return importlib.import_module(f".{name}", __package__) if __package__ else importlib.import_module(name)


def __getattr__(name: str) -> Any:
    """`verifier.compute_reward` and friends: the grading module's names, imported on first use."""
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(_sibling("verifier_grade"), name)


def score(workspace: Path, tests_dir: Path, logs_dir: Path, *, config: Path | None = None,
          python: str | None = None, run_lint: bool = True, rng: random.Random | None = None,
          zygote: bool = True, subreaper: bool = False, detach_cleanup: bool = False,
          strays_killed: int | None = None) -> dict[str, Any]:
    """Grade the submission in `workspace`; writes reward.txt + reward-details.json into `logs_dir`.

    `python` is the interpreter for the test runs (default: this one). `run_lint=False` and `rng` exist
    for the adversarial tests (runtime defences alone, a fixed run order); tasks always lint.
    `zygote=False` starts every run as a fresh subprocess (the fallback path), for tests and benchmarks.
    `subreaper=True` (the CLI) makes this process the reaper of the runs' orphans (a host process
    calling `score()` keeps its own semantics); `detach_cleanup=True` (the CLI) leaves the scratch dir's
    removal to a detached process. Returns the details dict (also written to reward-details.json).
    """
    start = time.monotonic()
    scratch, failure = None, None
    try:  # first: the zygote warms up while the rest of the verifier is imported
        scratch = vlayout.Scratch.open(Path(workspace), Path(tests_dir), python or sys.executable, zygote=zygote)
    except Exception as exc:  # graded as 0 with the reason, like any other failure
        failure = exc
    if subreaper:  # after the zygote's start, before any run: orphans of runs are reaped here
        _sibling("verifier_launch").become_subreaper()
    try:
        grading = _sibling("verifier_grade")
        return grading.grade(scratch, failure, Path(tests_dir), Path(logs_dir), config=config, run_lint=run_lint,
                             rng=rng, start=start, strays_killed=strays_killed)
    finally:
        if scratch is not None:
            scratch.close(detach=detach_cleanup)


def score_batch(workspace: Path, tests_dir: Path, logs_dir: Path, batch: Path, *, config: Path | None = None,
                python: str | None = None, run_lint: bool = True, subreaper: bool = False,
                detach_cleanup: bool = False, strays_killed: int | None = None) -> list[dict[str, Any]]:
    """Grade a group of submissions to this task one after another, each as `score` grades one, with one
    verifier start and one zygote (what a grading pays before its first run, about 40 % of it).
    `run_lint=False` as for `score`.

    `batch` (inside `tests_dir`, so hidden from every run) holds `items.json`, `[{"name": N, "source":
    file or null}, ...]`: each source is put at the submission's path in `workspace` (null: none there)
    and graded into `logs_dir/N/`. Between two gradings every process of the last one's runs has been
    killed and what they wrote is deleted (`Runner.end`, `Scratch.reset`): what one submission's runs could
    leave for the next is what a run can leave for another run of its own grading (docs/integrity.md)."""
    import json

    tests_dir, batch = Path(tests_dir).resolve(), Path(batch).resolve()
    if not batch.is_relative_to(tests_dir):
        raise ValueError(f"the batch dir {batch} is not inside the tests dir {tests_dir}: the runs could read it")
    config = Path(config or tests_dir / "verifier_config.json")
    items = json.loads((batch / "items.json").read_text(encoding="utf-8"))
    submission = Path(workspace) / json.loads(config.read_text(encoding="utf-8"))["submission"]
    names = [str(item["name"]) for item in items]
    if len(set(names)) != len(names) or not all(n.isdigit() for n in names):
        raise ValueError("batch items are named by distinct numbers")
    scratch, failure = None, None
    try:
        scratch = vlayout.Scratch.open(Path(workspace), tests_dir, python or sys.executable)
    except Exception as exc:
        failure = exc
    if subreaper:
        _sibling("verifier_launch").become_subreaper()
    grading = _sibling("verifier_grade")
    graded = []
    try:
        for name, item in zip(names, items):
            start = time.monotonic()
            submission.unlink(missing_ok=True)
            if item["source"] is not None:
                submission.parent.mkdir(parents=True, exist_ok=True)
                submission.write_bytes((batch / item["source"]).read_bytes())
            graded.append(grading.grade(scratch, failure, tests_dir, Path(logs_dir) / name, config=config,
                                        run_lint=run_lint, start=start, strays_killed=strays_killed))
            if scratch is not None:
                scratch.reset()
    finally:
        if scratch is not None:
            scratch.close(detach=detach_cleanup)
    return graded


def _arguments(argv: list[str]) -> dict[str, str]:
    """`--config C --workspace W --logs L [--python P] [--strays kill]`, read without argparse (whose import
    costs about as much as everything else before the zygote starts); anything else gets argparse's usage
    error."""
    names = {"--config", "--workspace", "--logs", "--python", "--strays", "--batch"}
    pairs = dict(zip(argv[::2], argv[1::2]))
    if len(argv) % 2 or len(pairs) != len(argv) // 2 or not set(pairs) <= names \
            or not {"--config", "--workspace", "--logs"} <= set(pairs) or pairs.get("--strays", "kill") != "kill":
        import argparse

        parser = argparse.ArgumentParser(description="Grade a test_synthesis submission and write the reward.")
        parser.add_argument("--config", required=True, help="verifier_config.json (its dir holds the diffs)")
        parser.add_argument("--workspace", required=True, help="the repository at A, with the submission")
        parser.add_argument("--logs", required=True, help="where reward.txt and reward-details.json go")
        parser.add_argument("--python", default=None, help="interpreter for the test runs (default: this one)")
        parser.add_argument("--strays", choices=["kill"], default=None,
                            help="first kill the processes the agent left in this container (test.sh does)")
        parser.add_argument("--batch", default=None,
                            help="grade the submissions listed in BATCH/items.json one after another (scorers)")
        return {f"--{k}": v for k, v in vars(parser.parse_args(argv)).items() if v is not None}
    return pairs


def main(argv: list[str] | None = None) -> int:
    """CLI entry: grade and write the reward; exit code 0 once the reward file is written."""
    args = _arguments(sys.argv[1:] if argv is None else argv)
    # Before anything else: nothing the agent left running may watch or touch the grading.
    # Only where Harbor puts the verifier (/tests): a copy run on a host must never signal the host's processes.
    in_task = Path(__file__).resolve() == Path("/tests/verifier.py")
    strays = _sibling("verifier_strays").reap() if args.get("--strays") == "kill" and in_task else None
    config = Path(args["--config"])
    if "--batch" in args:
        for graded in score_batch(Path(args["--workspace"]), config.parent, Path(args["--logs"]), Path(args["--batch"]),
                                  config=config, python=args.get("--python"), subreaper=True, detach_cleanup=True,
                                  strays_killed=strays):
            print(f"reward {graded['reward']}")
        return 0
    details = score(Path(args["--workspace"]), config.parent, Path(args["--logs"]), config=config,
                    python=args.get("--python"), subreaper=True, detach_cleanup=True, strays_killed=strays)
    print(f"reward {details['reward']}" + (f" ({details['reason']})" if details["reason"] else ""))
    return 0


if __name__ == "__main__":
    exit_code = main()
    # Everything is written and the scratch dir is gone: skip the interpreter's teardown of the ~150
    # modules grading imported (5-10 ms of every grading, measured in a task container).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(exit_code)

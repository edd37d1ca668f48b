"""How the reward orders four kinds of submission on a dataset's tasks (issue 16, item 7).

    python3 scripts/reward_figures.py DATASET_DIR [DATASET_DIR ...] [--json OUT]

For every task, graded in Docker exactly as validation grades (`validate.TaskRunner`):
  (a) oracle      the task's reference tests;
  (b) own tests   the repository's own test file that covers the function most;
  (c) B only      the reference tests cut to the one test function that catches B and the fewest siblings
                  (module-level code kept): what a file aimed at the one change it guessed earns;
  (d) no asserts  the reference tests with every assertion turned into a bare call (`assert f(x) == y`
                  becomes `f(x)`, `pytest.raises` blocks swallow the exception): calls that check nothing;
  (e) B only + calls           (c) plus the oracle's other tests as bare calls, in tests of their own: what
                               calls that assert nothing add to a weak file (issue 31, item 2);
  (f) B only + calls inside    the same calls moved into (c)'s killing test (tests without parameters):
                               what a rule crediting only the lines of cases that catch a change would
                               still pay, since the calls now run inside such a case;
  (g) empty       a file with no test at all.
With `--gradings N` the oracle and the empty file are graded N times each (their row is the mean; a
line after the table counts the tasks on which every grading gave 1.0 and 0.0: twins and siblings are
drawn anew at each grading, so this is what issue 31's acceptance asks of them).
Prints one row per submission kind (mean, min, max, how many tasks) and each task's rewards.
A user expects a > c > d = 0 and b = 0 (the suite misses B by construction).
"""

from __future__ import annotations

import argparse
import ast
import json
import statistics
import sys
from pathlib import Path

from repo2rlenv.dataset.taskdir import DatasetPaths, TaskPaths
from repo2rlenv.pipelines.test_synthesis.oracle.calls_only import calls_only
from repo2rlenv.sandbox.docker import docker_client
from repo2rlenv.sandbox.base import Limits
from repo2rlenv.validate import TaskRunner, _existing_tests_text, build_task_image

KINDS = ("oracle", "own tests", "B only", "no asserts", "B only + calls", "B only + calls inside", "empty")


def _is_test(node: ast.stmt) -> bool:
    return isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name.lower().startswith("test")


def only_test(source: str, name: str) -> str:
    """`source` with its test functions and classes cut to `name` (a function, or a class of tests)."""
    tree = ast.parse(source)
    tree.body = [n for n in tree.body if not _is_test(n) or n.name == name]
    return ast.unparse(tree) + "\n"


def no_asserts(source: str) -> str:
    return calls_only(source) or source


def _killer(oracle_source: str, details: dict) -> str | None:
    """The name of the oracle's test (function or class) that kills B and the fewest siblings."""
    kills = details.get("kills") or {}
    by_test: dict[str, int] = {}
    for case in kills.get("B", []):
        test = case.split("::")[1].split("[")[0]
        siblings = sum(any(c.split("::")[1].split("[")[0] == test for c in cases)
                       for name, cases in kills.items() if name != "B")
        by_test[test] = min(by_test.get(test, siblings), siblings)
    if not by_test:
        return None
    return min(sorted(by_test), key=by_test.get)


def _b_only(oracle_source: str, details: dict) -> str | None:
    """The oracle cut to its test that kills B and the fewest siblings."""
    name = _killer(oracle_source, details)
    return only_test(oracle_source, name) if name else None


def with_calls(oracle_source: str, details: dict, *, inside: bool) -> str | None:
    """(e) or (f): the B-only file plus the oracle's other tests turned into bare calls, as tests of
    their own or (`inside`) appended to the killing test's body (parameterless top-level tests only,
    whose bodies need no fixture)."""
    name = _killer(oracle_source, details)
    bare = calls_only(oracle_source)
    if not name or not bare:
        return None
    tree, calls = ast.parse(oracle_source), ast.parse(bare)
    others = [n for n in calls.body if _is_test(n) and n.name != name]
    tree.body = [n for n in tree.body if not _is_test(n) or n.name == name]
    if not inside:
        tree.body += others
        return ast.unparse(tree) + "\n"
    killer = next(n for n in tree.body if _is_test(n) and n.name == name)
    plain = [n for n in others if isinstance(n, ast.FunctionDef) and not n.args.args and not n.decorator_list]
    if not isinstance(killer, ast.FunctionDef) or not plain:
        return None
    for fn in plain:
        killer.body += fn.body
    return ast.unparse(tree) + "\n"


def grade_task(client, task: TaskPaths, limits: Limits, gradings: int = 1) -> dict:
    image = build_task_image(client, task)
    runner = TaskRunner(client, task, image, limits)
    oracle_source = next(p for p in task.solution.glob("test_*.py")).read_text()
    oracles = [runner.trial(runner.solve_with_oracle) for _ in range(gradings)]
    oracle = oracles[0]
    empties = [runner.trial(runner.submit_text("")).reward for _ in range(gradings)]
    out: dict = {"oracle": _mean([o.reward for o in oracles]), "empty": _mean(empties),
                 "oracle gradings": [o.reward for o in oracles], "empty gradings": empties}
    own = _existing_tests_text(task)
    out["own tests"] = runner.trial(runner.submit_text(own)).reward if own else None
    cut = _b_only(oracle_source, oracle.details)
    out["B only"] = runner.trial(runner.submit_text(cut)).reward if cut else None
    out["no asserts"] = runner.trial(runner.submit_text(no_asserts(oracle_source))).reward
    for kind, inside in (("B only + calls", False), ("B only + calls inside", True)):
        text = with_calls(oracle_source, oracle.details, inside=inside)
        out[kind] = runner.trial(runner.submit_text(text)).reward if text else None
    out["siblings"] = len(list(task.siblings.glob("*.diff"))) if task.siblings.is_dir() else 0
    return out


def _mean(rewards: list[float | None]) -> float | None:
    """None when any grading was an infrastructure failure (it is not a reward)."""
    return None if any(r is None for r in rewards) else statistics.mean(rewards)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("datasets", nargs="+", type=Path)
    parser.add_argument("--json", type=Path, help="write every task's rewards here")
    parser.add_argument("--gradings", type=int, default=1, help="grade the oracle and the empty file this often")
    args = parser.parse_args(argv)
    client = docker_client()
    limits = Limits(timeout_sec=900, memory_mb=4096, cpus=2.0, pids=1024)
    rows: dict[str, dict] = {}
    for root in args.datasets:
        dataset = DatasetPaths(root)
        for task_id in dataset.task_ids():
            rows[task_id] = grade_task(client, dataset.task(task_id), limits, args.gradings)
            print(task_id, json.dumps(rows[task_id]), flush=True)
    print("\n| submission | mean | min | max | tasks |\n|---|---|---|---|---|")
    for kind in KINDS:
        got = [r[kind] for r in rows.values() if r.get(kind) is not None]
        if got:
            print(f"| {kind} | {statistics.mean(got):.3f} | {min(got):.3f} | {max(got):.3f} | {len(got)} |")
        else:
            print(f"| {kind} | – | – | – | 0 |")
    whole = sum(r["oracle gradings"] == [1.0] * args.gradings for r in rows.values())
    none = sum(r["empty gradings"] == [0.0] * args.gradings for r in rows.values())
    print(f"\noracle 1.0 in all {args.gradings} gradings on {whole} of {len(rows)} tasks; "
          f"empty 0.0 in all {args.gradings} on {none} of {len(rows)}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

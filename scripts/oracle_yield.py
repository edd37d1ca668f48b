"""Measure how often the differential oracle turns a surviving mutant into a task (issue 5's acceptance).

    python3 scripts/oracle_yield.py DATASET_DIR [--examples 3] [--survivors N] [--reverify K [--max-tasks N] [--workers W]]
                                                [--json OUT]

DATASET_DIR comes from `repo2rlenv generate --pipeline-opt strategy=mutation` with a large `limit` and
`max_per_function`, so that every surviving mutant gets an oracle attempt. Prints, per operator, the funnel
gated → survived → oracle found → emitted (→ validated at 1.0, when the run validated), the share of
surviving gated mutants that got an oracle, why the others got none (`oracle.misses.MissClass`, read from
each candidate's recorded diagnosis), how many oracles reach into private names (the target is to assert
only through the public API), a few example oracles, and with `--survivors N` the diffs of N surviving
mutants with their outcome. With `--reverify K` it grades up to `--max-tasks` emitted tasks K times each in
Docker (`repo2rlenv.validate.validate_task`) and lists every run whose oracle reward is not 1.0 or whose
empty submission is not 0.0 (flakiness).

Reads `candidates.jsonl`; a run that was interrupted has none, so then the per-candidate journal under
`.r2e-state/` is read instead (the funnel is then over the candidates decided so far).
"""

from __future__ import annotations

import argparse
import ast
import json
import random
import sys
import time
from collections import Counter, defaultdict
from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from repo2rlenv.dataset.manifest import load_validation  # noqa: E402
from repo2rlenv.pipelines.test_synthesis.candidates import Candidate, SkipReason  # noqa: E402
from repo2rlenv.pipelines.test_synthesis.oracle.differential.differential import NoOracle  # noqa: E402
from repo2rlenv.pipelines.test_synthesis.oracle.differential.misses import MissClass, classify_miss, skip_detail  # noqa: E402
from repo2rlenv.dataset.taskdir import DatasetPaths, TaskPaths  # noqa: E402

# Drop reasons meaning "the oracle step found nothing"; any later drop happened after an oracle was found.
NO_ORACLE_REASONS = frozenset({SkipReason.no_oracle.value, *(r.value for r in NoOracle)})


class Stage(StrEnum):
    """Funnel columns, in order; a candidate counted in one column is counted in every earlier one."""

    decided = "decided"
    gated = "gated"
    survived = "survived"
    oracle = "oracle found"
    emitted = "emitted"
    validated = "validated 1.0"


class ReverifyRun(BaseModel):
    """One grading of one task's oracle and empty submission."""

    model_config = ConfigDict(extra="forbid")

    task_id: str
    run: int = Field(description="1-based run number.")
    oracle_reward: float | None
    empty_reward: float | None
    duration_sec: float
    problem: str = Field("", description="Why this run is unexpected; empty when it is not.")


def load_candidates(dataset: DatasetPaths) -> tuple[list[Candidate], str]:
    """The dataset's decided candidates and where they were read from."""
    if dataset.candidates.is_file():
        lines = dataset.candidates.read_text().splitlines()
        return [Candidate.model_validate_json(line) for line in lines if line.strip()], str(dataset.candidates)
    journals = sorted((dataset.root / ".r2e-state").glob("*.jsonl"), key=lambda p: p.stat().st_mtime)
    if not journals:
        raise FileNotFoundError(f"{dataset.root} has neither candidates.jsonl nor a .r2e-state journal")
    latest: dict[str, Candidate] = {}
    for line in journals[-1].read_text().splitlines():
        if line.strip():
            cand = Candidate.model_validate_json(line)
            latest[cand.candidate_id] = cand
    return list(latest.values()), f"{journals[-1]} (journal: the run did not finish)"


def stages_reached(cand: Candidate, dataset: DatasetPaths) -> list[Stage]:
    """Every funnel stage `cand` reached."""
    reached = [Stage.decided]
    if cand.killed is None:
        return reached
    reached.append(Stage.gated)
    if cand.killed:
        return reached
    reached.append(Stage.survived)
    if cand.status == "dropped" and cand.skip_reason in NO_ORACLE_REASONS:
        return reached
    if cand.status == "pending":  # interrupted before its oracle step was recorded
        return reached
    reached.append(Stage.oracle)
    if cand.status != "emitted" or not cand.task_id:
        return reached
    reached.append(Stage.emitted)
    summary = load_validation(dataset, cand.task_id)
    if summary is not None and summary.oracle_reward == 1.0:
        reached.append(Stage.validated)
    return reached


def funnel(cands: list[Candidate], dataset: DatasetPaths) -> dict[str, Counter[Stage]]:
    """Operator → how many candidates reached each stage."""
    table: dict[str, Counter[Stage]] = defaultdict(Counter)
    for cand in cands:
        table[cand.operator or cand.strategy].update(stages_reached(cand, dataset))
    return table


def lost_after_survival(cands: list[Candidate]) -> Counter[str]:
    """Why surviving mutants did not become tasks."""
    return Counter(c.skip_reason or c.status for c in cands if c.killed is False and c.status != "emitted")


def misses(cands: list[Candidate]) -> dict[MissClass, list[tuple[Candidate, str]]]:
    """Surviving candidates dropped at the oracle step, by why the differential oracle found nothing."""
    out: dict[MissClass, list[tuple[Candidate, str]]] = defaultdict(list)
    for cand in cands:
        if cand.killed is False and cand.status == "dropped" and cand.skip_reason in NO_ORACLE_REASONS:
            kind, note = classify_miss(cand.skip_reason, skip_detail(cand))
            out[kind].append((cand, note))
    return out


def print_misses(table: dict[MissClass, list[tuple[Candidate, str]]], per_class: int = 4) -> None:
    total = sum(len(v) for v in table.values())
    print(f"\nmisses by class ({total}):")
    print("| class | n | examples (function operator: note) |")
    print("|---|---|---|")
    for kind in MissClass:
        rows = table.get(kind, [])
        if rows:
            shown = "; ".join(f"{c.function.qualname} {c.operator}" + (f": {note}" if note else "")
                              for c, note in rows[:per_class])
            print(f"| {kind.value} | {len(rows)} | {shown.replace('|', '/')} |")


def outcome(cand: Candidate) -> str:
    if cand.status == "emitted":
        return "emitted"
    if cand.status == "dropped":
        return cand.skip_reason or "dropped"
    return "survived" if cand.killed is False else cand.status


def print_survivors(cands: list[Candidate], n: int) -> None:
    """The diffs of the first `n` surviving mutants, with what became of them."""
    for cand in [c for c in cands if c.killed is False][:n]:
        print(f"\n### {cand.function.path}::{cand.function.qualname} ({cand.operator}, {outcome(cand)})")
        print(cand.diff.rstrip())


def private_names(source: str) -> list[str]:
    """Private (single-underscore) attributes and imported names an oracle reaches; dunders are public."""
    found = []
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.Attribute):
            names = [node.attr]
        elif isinstance(node, ast.ImportFrom):
            names = [a.name for a in node.names]
        found += [n for n in names if n.startswith("_") and not (n.startswith("__") and n.endswith("__"))]
    return sorted(set(found))


def oracle_text(task: TaskPaths) -> str | None:
    files = sorted(task.solution.glob("test_*.py")) if task.solution.is_dir() else []
    return files[0].read_text() if files else None


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "n/a"


def print_funnel(table: dict[str, Counter[Stage]]) -> Counter[Stage]:
    cols = list(Stage)
    print("| operator | " + " | ".join(c.value for c in cols) + " | oracle / survived |")
    print("|---" * (len(cols) + 2) + "|")
    total: Counter[Stage] = Counter()
    for op in sorted(table):
        row = table[op]
        total.update(row)
        print(f"| {op} | " + " | ".join(str(row[c]) for c in cols)
              + f" | {_pct(row[Stage.oracle], row[Stage.survived])} |")
    print("| **all** | " + " | ".join(str(total[c]) for c in cols)
          + f" | {_pct(total[Stage.oracle], total[Stage.survived])} |")
    return total


def pick_examples(emitted: list[Candidate], k: int, seed: int) -> list[Candidate]:
    """Up to k emitted candidates, one per operator first so the examples vary."""
    rng = random.Random(seed)
    pool = emitted[:]
    rng.shuffle(pool)
    chosen, ops = [], set()
    for cand in pool:
        if cand.operator not in ops:
            chosen.append(cand)
            ops.add(cand.operator)
    chosen += [c for c in pool if c not in chosen]
    return chosen[:k]


def print_examples(examples: list[Candidate], dataset: DatasetPaths) -> None:
    for cand in examples:
        print(f"\n### {cand.function.path}::{cand.function.qualname} ({cand.operator}) → {cand.task_id}")
        print("```diff\n" + cand.diff.rstrip() + "\n```")
        text = oracle_text(dataset.task(cand.task_id or ""))
        print("```python\n" + (text or "(no oracle file)").rstrip() + "\n```")


def reverify(tasks: list[TaskPaths], runs: int, progress=print, workers: int = 1) -> list[ReverifyRun]:
    """Grade each task `runs` times in Docker, `workers` gradings at a time (each in its own containers);
    the oracle must score 1.0 and an empty submission 0.0."""
    from concurrent.futures import ThreadPoolExecutor

    from repo2rlenv.sandbox.docker import docker_client
    from repo2rlenv.validate import build_task_image, validate_task

    client = docker_client()
    images: dict[str, str | None] = {}  # each task's environment is built once, not once per run

    def build(task: TaskPaths) -> None:
        try:
            images[task.root.name] = build_task_image(client, task)
        except Exception:  # reported by the run that builds it again
            images[task.root.name] = None

    def one(task: TaskPaths, i: int) -> ReverifyRun:
        start = time.monotonic()
        try:
            res = validate_task(task, client=client, check_existing=False, image=images[task.root.name])
            oracle, empty = res.oracle.reward, res.empty.reward
            problem = "; ".join(res.problems)
        except Exception as exc:  # a broken run is a finding to report, not a reason to stop
            oracle = empty = None
            problem = f"{type(exc).__name__}: {exc}"[:300]
        run = ReverifyRun(task_id=task.root.name, run=i, oracle_reward=oracle, empty_reward=empty,
                          duration_sec=round(time.monotonic() - start, 1), problem=problem)
        progress(f"  {run.task_id} run {i}: oracle {oracle} empty {empty} ({run.duration_sec}s)"
                 + (f" PROBLEM: {problem}" if problem else ""))
        return run

    jobs = [(task, i) for i in range(1, runs + 1) for task in tasks]  # round by round: repeats are spread out
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        list(pool.map(build, tasks))
        return list(pool.map(lambda job: one(*job), jobs))


def print_stable_per_operator(sample: list[Candidate], runs: list[ReverifyRun], k: int) -> None:
    """Per operator: emitted tasks re-verified, and those whose every run was as expected."""
    bad = {r.task_id for r in runs if r.problem or r.oracle_reward != 1.0 or r.empty_reward != 0.0}
    per_op: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for cand in sample:
        row = per_op[cand.operator or cand.strategy]
        row[0] += 1
        row[1] += cand.task_id not in bad
    print(f"\n| operator | re-verified tasks | oracle 1.0 and empty 0.0 in all {k} runs |\n|---|---|---|")
    for op, (n, ok) in sorted(per_op.items()):
        print(f"| {op} | {n} | {ok} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--examples", type=int, default=3, help="example oracles to print")
    parser.add_argument("--survivors", type=int, default=0, metavar="N", help="print N surviving mutants' diffs")
    parser.add_argument("--reverify", type=int, default=0, metavar="K", help="grade emitted tasks K times in Docker")
    parser.add_argument("--max-tasks", type=int, default=10, help="most emitted tasks to reverify")
    parser.add_argument("--workers", type=int, default=1, help="gradings run at a time when reverifying")
    parser.add_argument("--seed", type=int, default=0, help="which emitted tasks are sampled for examples/reverify")
    parser.add_argument("--json", type=Path, help="also write the numbers as JSON here")
    args = parser.parse_args()
    dataset = DatasetPaths(args.dataset)
    try:
        cands, source = load_candidates(dataset)
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"{len(cands)} candidates from {source}")
    table = funnel(cands, dataset)
    total = print_funnel(table)
    survived, found = total[Stage.survived], total[Stage.oracle]
    print(f"\nsurviving gated mutants with a differential oracle: {found}/{survived} = {_pct(found, survived)}")
    print("surviving mutants without a task, by reason:")
    for reason, n in lost_after_survival(cands).most_common():
        print(f"  {n:4d}  {reason}")
    miss_table = misses(cands)
    print_misses(miss_table)
    emitted = [c for c in cands if c.status == "emitted" and c.task_id and dataset.task(c.task_id).root.is_dir()]
    private = {}
    for cand in emitted:
        text = oracle_text(dataset.task(cand.task_id or ""))
        names = private_names(text) if text else []
        if names:
            private[cand.task_id] = names
    print(f"emitted oracles reaching private names: {len(private)}/{len(emitted)}")
    for task_id, names in sorted(private.items()):
        print(f"  {task_id}: {', '.join(names)}")
    print_examples(pick_examples(emitted, args.examples, args.seed), dataset)
    print_survivors(cands, args.survivors)
    runs: list[ReverifyRun] = []
    if args.reverify:
        sample = pick_examples(emitted, args.max_tasks, args.seed)
        print(f"\nreverifying {len(sample)} task(s) x {args.reverify} in Docker")
        runs = reverify([dataset.task(c.task_id or "") for c in sample], args.reverify, workers=args.workers)
        bad = [r for r in runs if r.problem or r.oracle_reward != 1.0 or r.empty_reward != 0.0]
        print(f"reverify: {len(runs) - len(bad)}/{len(runs)} runs as expected (oracle 1.0, empty 0.0)")
        for r in bad:
            print(f"  FLAKY/FAILED {r.task_id} run {r.run}: oracle {r.oracle_reward} empty {r.empty_reward} {r.problem}")
        print_stable_per_operator(sample, runs, args.reverify)
    if args.json:
        args.json.write_text(json.dumps({
            "source": source,
            "funnel": {op: {s.value: row[s] for s in Stage} for op, row in sorted(table.items())},
            "total": {s.value: total[s] for s in Stage},
            "oracle_share_of_survivors": found / survived if survived else None,
            "lost_after_survival": dict(lost_after_survival(cands)),
            "misses": {k.value: len(v) for k, v in miss_table.items()},
            "private_name_oracles": private,
            "reverify": [r.model_dump() for r in runs],
        }, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

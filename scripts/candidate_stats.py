"""Summarise a dataset's candidates.jsonl: outcomes per operator, and a few surviving changes with diffs.

    python3 scripts/candidate_stats.py DATASET_DIR [--show 5]
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from repo2rlenv.pipelines.test_synthesis.candidates import Candidate  # noqa: E402


def outcome(c: Candidate) -> str:
    if c.status == "emitted":
        return "emitted"
    if c.status == "dropped":
        return c.skip_reason or "dropped"
    return "survived" if c.killed is False else c.status


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--show", type=int, default=5, help="surviving candidates to print with their diffs")
    args = parser.parse_args()
    lines = (args.dataset / "candidates.jsonl").read_text().splitlines()
    cands = [Candidate.model_validate_json(line) for line in lines if line.strip()]
    table: dict[str, Counter[str]] = defaultdict(Counter)
    for c in cands:
        table[c.operator or c.strategy][outcome(c)] += 1
    cols = sorted({k for row in table.values() for k in row})
    print(f"{len(cands)} candidates decided")
    print("| operator | " + " | ".join(cols) + " | total |")
    print("|---" * (len(cols) + 2) + "|")
    for op in sorted(table):
        row = table[op]
        print(f"| {op} | " + " | ".join(str(row.get(c, 0)) for c in cols) + f" | {sum(row.values())} |")
    total = Counter()
    for row in table.values():
        total.update(row)
    print("| **all** | " + " | ".join(str(total.get(c, 0)) for c in cols) + f" | {sum(total.values())} |")
    survivors = [c for c in cands if c.killed is False][: args.show]
    for c in survivors:
        print(f"\n### {c.function.path}::{c.function.qualname} ({c.operator}, {outcome(c)})")
        print(c.diff.rstrip())
    return 0


if __name__ == "__main__":
    sys.exit(main())

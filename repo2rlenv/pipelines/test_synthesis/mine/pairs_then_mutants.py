"""The hybrid miner (`strategy=hybrid`): real commit pairs first, then mutants of the functions no commit
pair touches.

A function that has a commit_pair candidate gets no mutation candidates, so a dataset never holds the
same function twice from two strategies. Functions are matched by module and qualname: with
`pair_base=commit` a pair's path is the commit's, which differs from the ref's after a layout move.
When the history yields nothing (a plain directory, a shallow clone), mutation fills the whole run and
the reason is counted instead of raised.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from repo2rlenv.baseline.runner import BaselineReport
from repo2rlenv.pipelines.test_synthesis.candidates import Candidate
from repo2rlenv.pipelines.test_synthesis.mine.commit_pair import NoHistoryError, mine_commit_pairs
from repo2rlenv.pysource.functions import FunctionRecord
from repo2rlenv.pipelines.test_synthesis.mine.mutation import mine_mutations
from repo2rlenv.pipelines.test_synthesis.options import TestSynthesisOptions
from repo2rlenv.sources import RepoSource


def _same_function(cand: Candidate) -> str:
    return f"{cand.function.module}::{cand.function.qualname}"


def mine_hybrid(source: RepoSource, ref_commit: str | None, a_dir: Path, baseline: BaselineReport,
                options: TestSynthesisOptions, import_roots: list[str], *, first_parent: bool = True,
                ) -> tuple[list[Candidate], Counter[str], list[FunctionRecord], int]:
    """Commit pairs (newest first), then mutants of untouched functions; skip counts; functions; commits scanned."""
    try:
        pairs, skipped, scanned = mine_commit_pairs(source, ref_commit, a_dir, baseline, options, import_roots,
                                                     first_parent=first_parent)
    except NoHistoryError as exc:
        pairs, skipped, scanned = [], Counter({f"commit: {exc.reason}": 1}), 0
    mutants, mutation_skips, functions = mine_mutations(a_dir, baseline, options, import_roots)
    skipped.update(mutation_skips)
    taken = {_same_function(c) for c in pairs}
    fill = [c for c in mutants if _same_function(c) not in taken]
    skipped["function: has a commit_pair candidate"] += len(taken & {_same_function(c) for c in mutants})
    return pairs + fill, +skipped, functions, scanned

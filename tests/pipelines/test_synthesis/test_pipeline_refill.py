"""`limit` counts tasks after duplicates are merged, and a run refills what a merge removed (issue 34,
item 6). A one-branch function's mutants all catch one another (each is the other's hidden sibling), so
every task after the first of that function is merged into it: the run must not stop at `limit` tasks
made, but mine on until `limit` distinct tasks exist or the candidates run out, and say so."""

from __future__ import annotations

import json

import pytest

from repo2rlenv.config import GenerateConfig
from repo2rlenv.dataset.dedup import load_report
from repo2rlenv.dataset.taskdir import DatasetPaths
from repo2rlenv.generate import run_generate
from repo2rlenv.pipelines.test_synthesis.candidates import Candidate
from repo2rlenv.progress import Reporter

LABEL = 'def label(n):\n    if n > 10:\n        return "big"\n    return "small"\n'
WEAK_TEST = 'from tinypkg.core import label\n\n\ndef test_label_runs():\n    assert label(3) in ("big", "small")\n'


@pytest.mark.slow
def test_a_merged_task_is_refilled_and_the_summary_says_so(make_repo, tiny_package, tmp_path, r2e_cache):
    root = make_repo(tiny_package(WEAK_TEST, source=LABEL))
    out = tmp_path / "ds"
    config = GenerateConfig(repo=str(root), out=out, sandbox="local", cache_dir=r2e_cache,
                            pipeline_opts={"strategy": "mutation", "limit": 2, "seed": 0, "oracle": "differential"})
    result = run_generate(config, Reporter(quiet=True))
    stages = json.loads((out / "summary.json").read_text())["stages"]
    merged = load_report(DatasetPaths(out)).by_task
    # Before: two tasks made, one merged, the run stopped with one. Now it mined on past two tasks made.
    assert len(result.emitted) > 2 and stages["merged into duplicates"] == len(merged) >= 2
    assert stages["refilled after merges"] == len(result.emitted) - 2
    assert DatasetPaths(out).task_ids() == sorted(set(result.emitted) - set(merged))
    # One distinct task is all this function has: every candidate was decided, none left untried.
    cands = [Candidate.model_validate_json(line) for line in (out / "candidates.jsonl").read_text().splitlines()]
    assert len(cands) == stages["candidates"] and all(c.status in ("emitted", "dropped") for c in cands)

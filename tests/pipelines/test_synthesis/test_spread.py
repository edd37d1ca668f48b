"""Variety: survivors from places no task has come from yet are synthesized first."""

from __future__ import annotations

from repo2rlenv.pipelines.test_synthesis import spread
from repo2rlenv.pipelines.test_synthesis.candidates import Candidate
from repo2rlenv.pysource.functions import FunctionRecord


def cand(cid: str, path: str, qualname: str, kind: str) -> Candidate:
    func = FunctionRecord.model_construct(path=path, qualname=qualname)
    return Candidate.model_construct(candidate_id=cid, strategy="mutation", function=func, mutation_kind=kind,
                                     operator=None)


def test_a_second_task_from_a_taken_function_waits_for_every_fresh_one():
    done = [cand("e1", "pkg/errors.py", "Bad.__init__", "statement_removal")]
    batch = [cand("same_function", "pkg/errors.py", "Bad.__init__", "comparison"),
             cand("same_module_and_kind", "pkg/errors.py", "Worse.__init__", "statement_removal"),
             cand("same_kind", "pkg/core.py", "run", "statement_removal"),
             cand("fresh", "pkg/core.py", "stop", "comparison")]
    order = [c.candidate_id for c in spread.fresh_first(batch, done)]
    assert order == ["fresh", "same_kind", "same_module_and_kind", "same_function"]


def test_the_order_is_the_miners_among_equally_fresh_ones():
    batch = [cand(str(i), f"m{i}.py", "f", f"k{i}") for i in range(5)]
    assert spread.fresh_first(batch, []) == batch


def test_summary_counts_distinct_places():
    emitted = [cand("1", "a.py", "f", "x"), cand("2", "a.py", "g", "x"), cand("3", "b.py", "h", "y")]
    assert spread.summary(emitted) == {"functions": 3, "modules": 2, "kinds of change": 2}

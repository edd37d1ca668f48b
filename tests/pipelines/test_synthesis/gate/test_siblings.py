"""Sibling gating's choices (`gate/siblings.py`), table-driven over the search's two seams: the gate
runner decides which siblings survive, the oracle stage which the oracle catches. (A run through real
gates and a real oracle: `tests/pipelines/test_siblings.py`.)"""

from __future__ import annotations

from repo2rlenv.pipelines.test_synthesis.candidates import Candidate, GateResult
from repo2rlenv.pipelines.test_synthesis.gate.siblings import find_siblings
from repo2rlenv.pipelines.test_synthesis.options import TestSynthesisOptions
from repo2rlenv.pysource.functions import FunctionRecord

FUNC = FunctionRecord.model_construct(path="m.py", qualname="f")


def cand(cid: str) -> Candidate:
    return Candidate(candidate_id=cid, strategy="mutation", function=FUNC, files_b={"m.py": cid}, diff=cid)


class Gates:
    """Keeps the siblings named in `survivors` (the covering tests miss them), kills the rest."""

    def __init__(self, survivors: set[str]):
        self.survivors, self.seen = survivors, []

    def check_many(self, candidates: list[Candidate]) -> list[Candidate]:
        for c in candidates:
            self.seen.append(c.candidate_id)
            c.status, c.killed = "kept", c.candidate_id not in self.survivors
            c.gates.append(GateResult(gate="covering tests on B", passed=not c.killed))
        return candidates


class Oracle:
    """Catches the siblings in `caught`; of those, the ones in `crashing` only crash."""

    def __init__(self, caught: set[str], crashing: set[str] = frozenset(), extends: set[str] = frozenset()):
        self.caught, self.crashing, self.extends = caught, crashing, extends

    def catches(self, oracle: str, other: Candidate) -> bool:
        return other.candidate_id in self.caught or other.candidate_id in oracle.split("+")

    def crash_only(self, oracle: str, other: Candidate) -> bool:
        return other.candidate_id in self.crashing

    def extend(self, oracle: str, other: Candidate, suffix: str) -> tuple[str, str] | None:
        return (f"{oracle}+{other.candidate_id}", "perturbed") if other.candidate_id in self.extends else None


def test_the_siblings_that_survive_and_are_caught_are_kept_and_the_inputs_are_unchanged():
    others = [cand(c) for c in ("a", "b", "c", "d")]
    search = find_siblings(cand("x"), "oracle", others, gates=Gates({"a", "b", "d"}), probe=Oracle({"a", "d"}),
                           options=TestSynthesisOptions(siblings=2, sibling_oracles=False))
    assert [s.candidate_id for s in search.siblings] == ["a", "d"] and search.oracle == "oracle"
    assert all(o.status == "pending" and not o.gates for o in others)  # the search gated copies


def test_crashing_siblings_only_fill_up():
    others = [cand(c) for c in ("a", "b", "c")]
    search = find_siblings(cand("x"), "oracle", others, gates=Gates({"a", "b", "c"}),
                           probe=Oracle({"a", "b", "c"}, crashing={"a"}),
                           options=TestSynthesisOptions(siblings=2, sibling_oracles=False))
    assert [s.candidate_id for s in search.siblings] == ["b", "c"]


def test_a_missed_sibling_extends_the_oracle_in_the_gated_form():
    others = [cand("a")]
    search = find_siblings(cand("x"), "oracle", others, gates=Gates({"a"}), probe=Oracle(set(), extends={"a"}),
                           options=TestSynthesisOptions(siblings=1, sibling_oracles=True, reward_mode="gated"))
    assert [s.candidate_id for s in search.siblings] == ["a"]
    assert search.oracle == "oracle+a" and search.inputs == ["perturbed"]


def test_no_siblings_wanted_gates_nothing():
    gates = Gates({"a"})
    search = find_siblings(cand("x"), "oracle", [cand("a")], gates=gates, probe=Oracle({"a"}),
                           options=TestSynthesisOptions(siblings=0))
    assert search.siblings == [] and gates.seen == []

"""`time_budget_min`: past the budget no new candidate starts; the summary and the console say so, and a
rerun without it continues from the journal."""

from __future__ import annotations

import json

import pytest

from repo2rlenv.config import GenerateConfig
from repo2rlenv.generate import run_generate
from repo2rlenv.progress import Reporter


@pytest.mark.slow
def test_a_spent_budget_stops_new_candidates_and_a_rerun_continues(example_repo, tmp_path, r2e_cache):
    out = tmp_path / "ds"

    def generate(**opts):
        config = GenerateConfig(repo=str(example_repo), out=out, sandbox="local", cache_dir=r2e_cache,
                                pipeline_opts={"strategy": "mutation", "limit": 1, "seed": 3, **opts})
        return run_generate(config, Reporter(quiet=True))

    # A budget of 0.6 s is spent by the environment and the baseline: nothing is gated.
    first = generate(time_budget_min=0.01)
    assert first.emitted == []
    summary = json.loads((out / "summary.json").read_text())
    assert "time budget of 0.01 min spent" in summary["stopped"]
    assert summary["stages"].get("gated", 0) == 0
    second = generate()
    assert len(second.emitted) == 1
    assert "stopped" not in json.loads((out / "summary.json").read_text())


# One operator: every candidate of these runs is deferred or dropped, so each would otherwise try the
# example's every mutant (9 minutes on 2 cores instead of one).
FEW = {"operators": ["comparison_flip"]}


def _generate(example_repo, out, r2e_cache, **opts):
    config = GenerateConfig(repo=str(example_repo), out=out, sandbox="local", cache_dir=r2e_cache,
                            pipeline_opts={"strategy": "mutation", "limit": 1, "seed": 3, **opts})
    return run_generate(config, Reporter(quiet=True))


@pytest.mark.slow
def test_work_in_flight_the_time_left_cannot_afford_is_deferred_and_a_rerun_makes_it(
        example_repo, tmp_path, r2e_cache, monkeypatch):
    from repo2rlenv.pipelines.test_synthesis import budget

    out = tmp_path / "ds"
    # Publishing (validation) priced at a million seconds: the sibling search stops at once to keep its
    # time, and the candidate is put back before its task is written.
    monkeypatch.setitem(budget.FIRST_GUESS_SEC, "publish", 1e6)
    first = _generate(example_repo, out, r2e_cache, time_budget_min=60, **FEW)
    assert first.emitted == []
    summary = json.loads((out / "summary.json").read_text())
    # The clock only runs down: once one candidate cannot afford publishing, no later one can, so the run
    # stops instead of paying for every other candidate's oracle and deferring it too.
    assert summary["stages"][budget.DEFERRED] == 1
    assert summary["stopped"].startswith("time budget of 60 min too short for what is left (publish is expected")
    rows = [json.loads(line) for line in (out / "candidates.jsonl").read_text().splitlines()]
    deferred = [r for r in rows if r["status"] == "deferred"]
    assert deferred and all("publish is expected to take" in r["gates"][-1]["detail"] for r in deferred)
    assert any(g["gate"] == "siblings cut by the time budget" for g in deferred[0]["gates"])
    assert deferred[0]["seconds"]["oracle"] > 0
    assert not list((out / "tasks").glob("*/task.toml")) if (out / "tasks").exists() else True
    monkeypatch.setitem(budget.FIRST_GUESS_SEC, "publish", 60.0)
    second = _generate(example_repo, out, r2e_cache, time_budget_min=60, **FEW)
    assert len(second.emitted) == 1


@pytest.mark.slow
def test_a_candidate_over_its_share_is_dropped_with_a_reason_and_advice(example_repo, tmp_path, r2e_cache):
    out = tmp_path / "ds"
    _generate(example_repo, out, r2e_cache, candidate_budget_sec=0.001, **FEW)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["skip_reasons"]["over its time share (candidate_budget_sec)"] >= 1
    assert "candidate_budget_sec" in summary["advice"]["line"]


@pytest.mark.slow
def test_the_summary_says_where_the_time_went_also_when_interrupted(example_repo, tmp_path, r2e_cache, monkeypatch):
    from repo2rlenv.pipelines.test_synthesis.survivor_driver import Synthesizer

    out = tmp_path / "ds"
    _generate(example_repo, out, r2e_cache)
    time_ = json.loads((out / "summary.json").read_text())["time"]
    assert time_["budget_min"] == 18 and {"environment", "baseline", "mining"} <= set(time_["stages_sec"])
    assert all(t["seconds"] > 0 for t in time_["slowest_tests"])  # the example's tests take milliseconds
    assert time_["slowest_candidates"][0]["seconds"] > 0 and "oracle" in time_["slowest_candidates"][0]["detail"]

    def interrupted(self, cand):
        raise KeyboardInterrupt

    monkeypatch.setattr(Synthesizer, "synthesize", interrupted)
    (tmp_path / "ds2").mkdir()  # an --out this run did not create keeps what it wrote (generate.remove_partial_output)
    with pytest.raises(KeyboardInterrupt):
        _generate(example_repo, tmp_path / "ds2", r2e_cache)
    summary = json.loads((tmp_path / "ds2" / "summary.json").read_text())
    assert summary["stopped"] == "interrupted; a rerun continues"
    assert "baseline" in summary["time"]["stages_sec"]


@pytest.mark.slow
def test_the_sibling_search_and_the_twin_check_keep_to_their_shares(example_repo, tmp_path, r2e_cache):
    out = tmp_path / "ds"
    # Shares of a tenth of a millisecond: the sibling search stops before its first sibling, and the twin
    # check runs the one fastest covering test; the task is still made, and its record says what was cut.
    made = _generate(example_repo, out, r2e_cache, siblings_budget_sec=1e-4, twin_check_budget_sec=1e-4, **FEW)
    assert len(made.emitted) == 1
    rows = [json.loads(line) for line in (out / "candidates.jsonl").read_text().splitlines()]
    gates = {g["gate"]: g["detail"] for r in rows if r["status"] == "emitted" for g in r["gates"]}
    assert gates["siblings cut by the time budget"].startswith("0 found")
    assert gates["twin check cut to its time share"].startswith("the twin check ran the 1 fastest of ")

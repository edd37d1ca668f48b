"""One repo's run becomes an outcome: a failure is its stage, cause and log, never an exception."""

from __future__ import annotations

from repo2rlenv.config import GenerateConfig
from repo2rlenv.corpus.models import RepoJob
from repo2rlenv.corpus.worker import ForwardingReporter, run_repo


def test_a_failing_repo_is_an_outcome_with_stage_cause_and_log(tmp_path):
    events = []
    out = tmp_path / "dataset" / "runs" / "gone-1"
    job = RepoJob(name="gone-1", config=GenerateConfig(repo=str(tmp_path / "gone"), out=out,
                                                       pipeline_opts={"strategy": "mutation"}))
    outcome = run_repo(job, lambda *e: events.append(e), dataset_root=tmp_path / "dataset", limit=4)
    assert outcome.status == "failed" and outcome.stage_reached == "source"
    assert outcome.error.startswith("repository not found:") and "error:" not in outcome.error
    assert outcome.log == "runs/gone-1/logs/source.log"
    assert "repository not found" in (tmp_path / "dataset" / outcome.log).read_text()
    assert outcome.limit == 4 and outcome.emitted == []
    assert events[0][:2] == ("gone-1", "source")
    assert events[-1][1] == "source" and events[-1][2].startswith("failed: repository not found")


def test_the_forwarding_reporter_posts_stages_progress_and_warnings():
    events = []
    rep = ForwardingReporter("r", lambda *e: events.append(e))
    rep.stage("mining candidates", "mining")
    with rep.progress("candidates", total=3) as tick:
        tick("f emitted")
        tick.total(4)
        tick()
    rep.warn("slow")
    assert events == [("r", "mining", "mining candidates"), ("r", "mining", "candidates: 1/3 f emitted"),
                      ("r", "mining", "candidates: 2/4"), ("r", "mining", "warning: slow")]

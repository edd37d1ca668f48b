"""Corpus runs on this machine, for real (Docker, the two bundled examples and a repo that fails): one
dataset, per-repo run folders, budgets, a failing repo that stops nothing, and a driver killed with
SIGKILL mid-repo whose rerun ends with the uninterrupted run's dataset and no container left behind."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

from repo2rlenv.config import GenerateConfig
from repo2rlenv.corpus.driver import plan_corpus, run_corpus
from repo2rlenv.corpus.entries import RepoEntry, read_repos_file
from repo2rlenv.corpus.executors import LocalExecutor
from repo2rlenv.dataset.manifest import read_manifest
from repo2rlenv.dataset.taskdir import DatasetPaths
from repo2rlenv.progress import Reporter
from repo2rlenv.sandbox import owners
from repo2rlenv.sandbox.docker import LABEL, docker_client

from .conftest import corpus_command, run_corpus_cli, tree_digest, wait_for


def _summary(out):
    return json.loads((out / "summary.json").read_text())


def test_one_dataset_from_several_repos(uninterrupted_corpus, corpus_list):
    out, dataset = uninterrupted_corpus, DatasetPaths(uninterrupted_corpus)
    names = [e.name for e in read_repos_file(corpus_list)]
    summary = _summary(out)
    assert summary["kind"] == "corpus" and summary["executor"] == "local"
    assert summary["totals"] == {"repos": 3, "done": 2, "failed": 1, "not_run": 0, "emitted": 3, "merged": 0}
    broken, minicart, unitconv = summary["repos"]
    assert [r["name"] for r in summary["repos"]] == names
    # The failing repo stops nothing; its cause and full output are kept.
    assert broken["status"] == "failed" and broken["stage_reached"] not in ("done", "")
    assert broken["error"] and (out / broken["log"]).is_file()
    # Budgets: the broken repo gave its budget back; minicart used its own limit, unitconv what was left.
    assert (minicart["limit"], len(minicart["emitted"])) == (2, 2)
    assert (unitconv["limit"], len(unitconv["emitted"])) == (1, 1)
    assert minicart["funnel"]["candidates"] > 0 and minicart["skip_reasons"]
    # One dataset: every task under tasks/, one merged manifest, validated; per-repo files in runs/.
    ids = minicart["emitted"] + unitconv["emitted"]
    assert dataset.task_ids() == sorted(ids)
    rows = read_manifest(dataset.manifest)
    assert sorted(r.task_id for r in rows) == sorted(ids)
    assert all(r.validation is not None and r.validation.ok for r in rows)
    assert {r.repo for r in rows} == {"examples/minicart", "examples/unitconv"}
    for name in names[1:]:
        run = out / "runs" / name
        assert (run / "candidates.jsonl").is_file() and (run / "summary.json").is_file()
    assert not list(out.glob("**/.*.partial-*"))


def test_a_rerun_keeps_finished_repos_and_does_no_work(uninterrupted_corpus, corpus_list):
    before = tree_digest(uninterrupted_corpus / "tasks")
    start = time.monotonic()
    res = run_corpus_cli(corpus_list, uninterrupted_corpus)
    assert res.returncode == 0, res.stderr[-3000:]
    assert time.monotonic() - start < 60
    assert tree_digest(uninterrupted_corpus / "tasks") == before
    assert "kept" in res.stderr
    assert _summary(uninterrupted_corpus)["totals"]["emitted"] == 3


def _session_containers_of(pid: int) -> list:
    client = docker_client()
    found = []
    for c in client.containers.list(all=True, filters={"label": f"{LABEL}=session"}):
        owner = (c.labels or {}).get(owners.OWNER_LABEL, "")
        if owner.split(":")[1:2] == [str(pid)]:
            found.append(c)
    return found


def test_a_driver_killed_mid_repo_is_continued_by_the_rerun(uninterrupted_corpus, corpus_list, tmp_path):
    out = tmp_path / "dataset"
    minicart = read_repos_file(corpus_list)[1].name
    proc = subprocess.Popen(corpus_command(corpus_list, out), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # Killed once minicart has published one task in its run folder, before the corpus has any.
        wait_for(lambda: DatasetPaths(out / "runs" / minicart).task_ids(), 900, "minicart's first task", proc)
        assert _session_containers_of(proc.pid), "the run should hold a session container while it works"
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
    finally:
        if proc.poll() is None:
            proc.kill()
    # Its containers die with it (no reaper has run yet: no other run started). The bound is generous: on
    # a loaded 2-core machine the daemon took over 30 s to stop them (twice, in full-suite runs).
    wait_for(lambda: not _session_containers_of(proc.pid), 90, "the killed run's containers to go")
    res = run_corpus_cli(corpus_list, out)
    assert res.returncode == 0, res.stderr[-3000:]
    assert tree_digest(out / "tasks") == tree_digest(uninterrupted_corpus / "tasks")
    rows = read_manifest(DatasetPaths(out).manifest)
    assert len(rows) == len({r.task_id for r in rows}) == 3
    assert _summary(out)["totals"] == _summary(uninterrupted_corpus)["totals"]


def _journal_lines(out: Path) -> list[dict]:
    return [json.loads(line) for f in sorted((out / ".r2e-corpus").glob("*.jsonl")) for line in f.read_text().splitlines()]


def test_reruns_keep_a_finished_repo_unless_its_options_changed_or_failed_repos_are_retried(tmp_path):
    # A repo that fails at once (its directory is gone): the journal's logic, without Docker.
    out = tmp_path / "out"
    base = GenerateConfig(repo="x", out=out, pipeline_opts={"strategy": "mutation"})

    def run(options=None, retry=False):
        entry = RepoEntry(spec=str(tmp_path / "gone"), options=options or {})
        plan = plan_corpus(base, [entry], max_tasks=None, retry_failed=retry)
        return run_corpus(plan, LocalExecutor, Reporter(quiet=True))

    first = run()
    assert first.totals.failed == 1 and first.repos[0].stage_reached == "source"
    assert [bool(r["outcome"]) for r in _journal_lines(out)] == [False, True]
    assert run().repos[0] == first.repos[0]  # kept: nothing ran
    assert len(_journal_lines(out)) == 2
    run({"siblings": 1})  # the line's options changed: the repo runs again
    assert len(_journal_lines(out)) == 4
    run({"siblings": 1, "limit": 7})  # a limit is not a new setting: still kept
    assert len(_journal_lines(out)) == 4
    run({"siblings": 1}, retry=True)
    assert len(_journal_lines(out)) == 6

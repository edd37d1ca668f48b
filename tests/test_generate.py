"""A failed run leaves nothing half-written: staging dirs go, and an --out the run created keeps only its log
unless it holds published (complete) tasks."""

from __future__ import annotations

from pathlib import Path

from repo2rlenv.generate import LOGS_DIR, remove_partial_output


def _out(tmp_path: Path, *, task: bool) -> Path:
    out = tmp_path / "out"
    (out / LOGS_DIR).mkdir(parents=True)
    (out / LOGS_DIR / "baseline.log").write_text("pytest said no")
    (out / ".r2e-state").mkdir()
    (out / ".r2e-state" / "j.jsonl").write_text("{}\n")
    (out / "tasks" / ".t1.partial-abc").mkdir(parents=True)
    (out / "summary.json").write_text("{}")
    if task:
        (out / "tasks" / "t0").mkdir()
    return out


def test_created_out_without_tasks_keeps_only_logs(tmp_path):
    out = _out(tmp_path, task=False)
    remove_partial_output(out, created=True)
    assert sorted(p.name for p in out.iterdir()) == [LOGS_DIR]
    assert (out / LOGS_DIR / "baseline.log").read_text() == "pytest said no"


def test_published_tasks_and_the_journal_stay(tmp_path):
    out = _out(tmp_path, task=True)
    remove_partial_output(out, created=True)
    assert (out / "tasks" / "t0").is_dir() and (out / ".r2e-state" / "j.jsonl").is_file()
    assert not (out / "tasks" / ".t1.partial-abc").exists()


def test_an_existing_out_is_left_but_for_staging(tmp_path):
    out = _out(tmp_path, task=False)
    remove_partial_output(out, created=False)
    assert (out / "summary.json").is_file() and (out / ".r2e-state" / "j.jsonl").is_file()
    assert not (out / "tasks" / ".t1.partial-abc").exists()


def test_nothing_written_nothing_left(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    remove_partial_output(out, created=True)
    assert not out.exists()
    remove_partial_output(out, created=True)  # an --out that never appeared is fine

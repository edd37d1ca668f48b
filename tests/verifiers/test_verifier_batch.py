"""A group of submissions graded by one verifier (`verifier.score_batch`, `--batch`): the same rewards as
one grading each, nothing of one grading's runs left for the next."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from repo2rlenv.verifiers.test_synthesis import verifier_layout
from repo2rlenv.verifiers.test_synthesis.verifier import score_batch

WEAK = "from shopcalc.pricing import apply_discount\n\n\ndef test_one():\n    assert apply_discount(10, 100) == 5\n"
# Leaves files in its runs' own dirs (HOME, TMPDIR, its copy), which `Scratch.reset` removes.
LITTERING = ("import os\nfrom shopcalc.pricing import apply_discount\n\n\n"
             "def test_litter():\n"
             "    for where in (os.environ['HOME'], os.environ['TMPDIR'], '.'):\n"
             "        with open(os.path.join(where, 'left.txt'), 'w') as fh:\n"
             "            fh.write('x')\n"
             "    assert apply_discount(10, 100) == 5\n")


def _batch(tests_dir: Path, sources: list[str | None]) -> Path:
    batch = tests_dir / "batch"
    batch.mkdir()
    items = []
    for k, source in enumerate(sources):
        if source is not None:
            (batch / f"{k}.py").write_text(source)
        items.append({"name": str(k), "source": None if source is None else f"{k}.py"})
    (batch / "items.json").write_text(json.dumps(items))
    return batch


def test_a_batch_gives_each_submission_its_single_grading_reward(make_task, kit, portable_python, tmp_path):
    sources = [kit.GOOD_TEST, None, WEAK, LITTERING, LITTERING, kit.GOOD_TEST]
    task = make_task(None)
    singles = []
    for source in sources:
        path = task.workspace / kit.SUBMISSION
        path.unlink(missing_ok=True)
        if source is not None:
            task.write_submission(source)
        singles.append(task.score())
    batch = _batch(task.tests_dir, sources)
    scratch_parent = tmp_path / "tmp"
    scratch_parent.mkdir(mode=0o755)
    done = subprocess.run(
        [sys.executable, "-E", "-s", "-B", str(task.tests_dir / "verifier.py"),
         "--config", str(task.tests_dir / "verifier_config.json"), "--workspace", str(task.workspace),
         "--logs", str(tmp_path / "logs"), "--python", portable_python, "--batch", str(batch)],
        cwd="/", env={"PATH": os.environ["PATH"], "TMPDIR": str(scratch_parent)}, capture_output=True, text=True,
        timeout=600)
    assert done.returncode == 0, done.stderr
    graded = [json.loads((tmp_path / "logs" / str(k) / "reward-details.json").read_text()) for k in range(len(sources))]
    assert [g["reward"] for g in graded] == [s["reward"] for s in singles]
    assert done.stdout.splitlines() == [f"reward {s['reward']}" for s in singles]
    assert [g["reason"] for g in graded] == [s["reason"] for s in singles]
    assert [sorted(c["id"] for c in g["cases"]) for g in graded] == [sorted(c["id"] for c in s["cases"]) for s in singles]
    assert graded[0]["reward"] == 1.0 and graded[1]["reward"] == 0.0 and 0 < graded[2]["reward"] < 1.0
    # The littering grading's leftover process was killed before the next grading started (the same count
    # in the batch as alone), and the scratch tree goes once the batch is over.
    # The scratch tree goes once the batch is over.
    deadline = time.monotonic() + 30
    while list(scratch_parent.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert list(scratch_parent.iterdir()) == []


def test_reset_leaves_only_the_zygotes_parts(tmp_path):
    workspace, tests_dir = tmp_path / "ws", tmp_path / "tests"
    workspace.mkdir()
    tests_dir.mkdir()
    scratch = verifier_layout.Scratch.open(workspace, tests_dir, sys.executable, zygote=False)
    try:
        import random

        run = scratch.layout.new_run(random.Random(1), None)
        (run.ws / "deep").mkdir(parents=True)
        (run.ws / "deep" / "file").write_text("x")
        os.chmod(run.ws / "deep", 0o000)  # what a run may do to its own dirs
        (scratch.layout.stage / "a.py").write_text("A")
        (scratch.layout.logs / "run-0123.out").write_text("output")
        (scratch.layout.logs / "zygote.err").write_text("")
        scratch.reset()
        base = Path(scratch.tmp)
        assert sorted(p.name for p in base.iterdir()) == sorted(["boot", "runlogs", "stage"])
        assert list(scratch.layout.stage.iterdir()) == []
        assert [p.name for p in scratch.layout.logs.iterdir()] == ["zygote.err"]
        assert (scratch.layout.boot / "sitecustomize.py").is_file()
    finally:
        scratch.close()


def test_a_batch_dir_the_runs_could_read_is_refused(make_task, kit, tmp_path):
    task = make_task(None)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "items.json").write_text("[]")
    with pytest.raises(ValueError, match="not inside the tests dir"):
        score_batch(task.workspace, task.tests_dir, task.logs_dir, outside)

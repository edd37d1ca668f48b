"""plan.py: which files a push sends, which it deletes, and how it groups them into commits."""

from __future__ import annotations

import hashlib
from pathlib import Path

from repo2rlenv.hub.plan import CommitLimits, RemoteFile, git_blob_sha1, plan_push


def write(root: Path, files: dict[str, bytes]) -> Path:
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return root


FOLDER = {
    "README.md": b"card",
    "data/train-00000-of-00001.parquet": b"PAR1 table",
    "tasks/t1/task.toml": b"one",
    "tasks/t1/instruction.md": b"do it",
    "tasks/t2/task.toml": b"two",
    "tasks/t3/task.toml": b"three" * 100,
}


def test_unchanged_files_are_recognised_by_git_sha1_or_lfs_sha256(tmp_path: Path) -> None:
    folder = write(tmp_path, FOLDER)
    remote = [
        RemoteFile("tasks/t1/task.toml", git_blob_sha1(b"one")),
        RemoteFile("tasks/t2/task.toml", git_blob_sha1(b"an older two")),
        RemoteFile("data/train-00000-of-00001.parquet", "pointer-sha1", hashlib.sha256(b"PAR1 table").hexdigest()),
        RemoteFile("tasks/gone/task.toml", "x"),
        RemoteFile("validation/gone.json", "x"),
        RemoteFile(".gitattributes", "x"),
        RemoteFile("notes/by-hand.md", "x"),
    ]
    plan = plan_push(folder, remote, CommitLimits())
    assert set(plan.unchanged) == {"tasks/t1/task.toml", "data/train-00000-of-00001.parquet"}
    assert "tasks/t2/task.toml" in plan.changed and "tasks/t1/instruction.md" in plan.changed
    assert plan.stale == ("tasks/gone/task.toml", "validation/gone.json")  # never files outside the layout
    (batch,) = plan.batches
    assert batch.tasks == ["t1", "t2", "t3"] and batch.dataset_files and batch.delete == list(plan.stale)


def test_commits_hold_whole_tasks_within_the_limits_with_dataset_files_last(tmp_path: Path) -> None:
    folder = write(tmp_path, FOLDER)
    plan = plan_push(folder, [RemoteFile("tasks/old/x", "x")], CommitLimits(max_files=10, max_bytes=400))
    # t3 alone is 500 bytes: over the byte limit, so it gets a commit of its own rather than being split.
    assert [b.tasks for b in plan.batches] == [["t1", "t2"], ["t3"], []]
    last = plan.batches[-1]
    assert last.add == ["README.md", "data/train-00000-of-00001.parquet"] and last.delete == ["tasks/old/x"]
    assert not any(b.dataset_files for b in plan.batches[:-1])
    assert sorted(p for b in plan.batches for p in b.add) == sorted(FOLDER)


def test_nothing_to_send_means_no_commit(tmp_path: Path) -> None:
    folder = write(tmp_path, {"tasks/t1/task.toml": b"one"})
    plan = plan_push(folder, [RemoteFile("tasks/t1/task.toml", git_blob_sha1(b"one"))], CommitLimits())
    assert plan.batches == () and plan.changed == () and plan.stale == ()

"""`push` and `pull` for real through huggingface_hub, against the fake Hub of hub_server.py on 127.0.0.1.

huggingface_hub is pointed at the server by HF_ENDPOINT and told HF_HUB_DISABLE_XET=1, so large files
(the parquet table, the non-UTF-8 file of each task) go through the LFS batch protocol; small text files
go inline in the NDJSON commit. The server records every commit's operations.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

import pytest
from click.testing import CliRunner, Result

from repo2rlenv.cli.hub import pull, push
from repo2rlenv.hub.errors import PushFailed
from repo2rlenv.hub.export import export_dataset
from repo2rlenv.hub.layout import TABLE_PATH
from repo2rlenv.hub.plan import CommitLimits
from repo2rlenv.hub.push import push_dataset
from repo2rlenv.hub.registry import publish_target
from repo2rlenv.dataset.manifest import write_manifest
from repo2rlenv.dataset.taskdir import DatasetPaths

REPO = "acme/widget-tasks"
TASK_A, TASK_B, TASK_C = "acme__widgets-ts-aaaa1111", "acme__widgets-ts-bbbb2222", "zeta__gears-ts-cccc3333"




def invoke(command: Any, args: list[str]) -> Result:
    return CliRunner().invoke(command, args)


def one_error_line(result: Result) -> str:
    """The error: exit code 2 and exactly one line starting `error:`, the last one (progress may precede it)."""
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error:")]
    assert len(errors) == 1 and lines[-1] == errors[0], result.stderr
    return errors[0]


def test_push_then_pull_round_trip_is_byte_identical(make_dataset: Callable[..., Path], fake_hub: Any,
                                                     tmp_path: Path, hub_kit: ModuleType) -> None:
    src = make_dataset()
    pushed = invoke(push, [str(src), "--repo-id", REPO])
    assert pushed.exit_code == 0, pushed.output
    assert "pushed 3 tasks to acme/widget-tasks@main" in pushed.stderr
    assert hub_kit.TOKEN not in pushed.output

    # What the Hub holds is exactly what `export` writes for the same repo.
    export_dataset(src, tmp_path / "exported", publish_target(REPO, endpoint=fake_hub.url))
    expected = hub_kit.tree_state(tmp_path / "exported")
    on_hub = fake_hub.state.files(REPO)
    assert {p: d for p, d in on_hub.items() if p != ".gitattributes"} == \
        {p: d for p, (d, _x) in expected.items() if not p.endswith("/")}
    (commit,) = fake_hub.state.commits
    assert TABLE_PATH in commit.lfs_added and f"tasks/{TASK_A}/environment/repo/src/widgets/logo.bin" in commit.lfs_added
    assert f"tasks/{TASK_A}/tests/test.sh" in commit.added  # text travels inline in the commit

    pulled = invoke(pull, [REPO, str(tmp_path / "pulled")])
    assert pulled.exit_code == 0, pulled.output
    # Bytes and executable bits of every file, and the empty directories the Hub cannot hold.
    assert hub_kit.tree_state(tmp_path / "pulled") == expected
    assert hub_kit.tree_state(tmp_path / "pulled" / "tasks") == hub_kit.tree_state(src / "tasks")
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".pulled.")], "staging dir left behind"


def test_pushing_again_sends_only_changes_and_removes_stale_files(make_dataset: Callable[..., Path], fake_hub: Any,
                                                                  tmp_path: Path, hub_kit: ModuleType) -> None:
    specs = list(hub_kit.DEFAULT_TASKS)
    src = make_dataset(specs)
    push_dataset(src, REPO)
    unchanged_before = {p: d for p, d in fake_hub.state.files(REPO).items() if p.startswith(f"tasks/{TASK_B}/")}
    task_c_files = {p for p in fake_hub.state.files(REPO) if p.startswith(f"tasks/{TASK_C}/")}

    # Task A changes one file and loses another; task C goes away entirely.
    dataset = DatasetPaths(src)
    (dataset.task(TASK_A).instruction).write_text("Write sharper tests for `price`.\n")
    (dataset.task(TASK_A).tests / "verifier_config.json").unlink()
    shutil.rmtree(dataset.task(TASK_C).root)
    (src / "validation" / f"{TASK_C}.json").unlink()
    write_manifest(dataset)
    result = push_dataset(src, REPO, include_unvalidated=True)  # A changed since its validation

    second = fake_hub.state.commits[-1]
    sent = set(second.added) | set(second.lfs_added)
    assert sent == set(result.uploaded)
    assert f"tasks/{TASK_A}/instruction.md" in sent
    assert not [p for p in sent if p.startswith((f"tasks/{TASK_B}/", f"tasks/{TASK_A}/environment/"))]
    assert {TABLE_PATH, "README.md", "registry.json", "manifest.jsonl"} <= sent
    assert set(second.deleted) == set(result.deleted)
    assert f"tasks/{TASK_A}/tests/verifier_config.json" in second.deleted
    assert {p for p in second.deleted if p.startswith(f"tasks/{TASK_C}/")} == task_c_files
    assert f"validation/{TASK_C}.json" in second.deleted
    # Unchanged files stay, byte for byte; the Hub's own .gitattributes is never touched.
    now = fake_hub.state.files(REPO)
    assert {p: d for p, d in now.items() if p.startswith(f"tasks/{TASK_B}/")} == unchanged_before
    assert ".gitattributes" in now
    export_dataset(src, tmp_path / "exported", publish_target(REPO, endpoint=fake_hub.url), include_unvalidated=True)
    assert {p: d for p, d in now.items() if p != ".gitattributes"} == \
        {p: d for p, (d, _x) in hub_kit.tree_state(tmp_path / "exported").items() if not p.endswith("/")}

    commits_before = len(fake_hub.state.commits)
    again = push_dataset(src, REPO, include_unvalidated=True)
    assert again.commits == [] and again.uploaded == [] and len(fake_hub.state.commits) == commits_before


def test_push_to_a_branch_and_pull_that_revision(make_dataset: Callable[..., Path], fake_hub: Any,
                                                 tmp_path: Path, hub_kit: ModuleType) -> None:
    src = make_dataset()
    result = invoke(push, [str(src), "--repo-id", REPO, "--revision", "v2", "--commit-message", "first cut"])
    assert result.exit_code == 0, result.output
    assert set(fake_hub.state.files(REPO, "main")) == {".gitattributes"}
    assert fake_hub.state.commits[-1].branch == "v2" and fake_hub.state.commits[-1].summary == "first cut"
    assert invoke(pull, [REPO, str(tmp_path / "p"), "--revision", "v2"]).exit_code == 0
    assert hub_kit.tree_state(tmp_path / "p" / "tasks") == hub_kit.tree_state(src / "tasks")
    assert "harbor run --repo " + fake_hub.url + "/datasets/acme/widget-tasks@v2" in (tmp_path / "p/README.md").read_text()


def test_a_failure_midway_says_what_was_and_was_not_committed(make_dataset: Callable[..., Path],
                                                              fake_hub: Any) -> None:
    src = make_dataset()
    fake_hub.state.fail_commits = {2}
    one_task_per_commit = CommitLimits(max_files=5)
    with pytest.raises(PushFailed) as info:
        push_dataset(src, REPO, limits=one_task_per_commit)
    message = str(info.value)
    assert message.startswith(f"push to {REPO} failed at commit 2 of 4 (the Hub answered HTTP 500: simulated outage")
    assert f"committed: 1 changed task(s) ({TASK_A}) in 1 commit(s)" in message
    assert f"not committed: 2 changed task(s) ({TASK_B}, {TASK_C}), the table, card, registry and manifest" in message
    assert "\n" not in message
    on_hub = fake_hub.state.files(REPO)
    assert any(p.startswith(f"tasks/{TASK_A}/") for p in on_hub)
    assert not any(p.startswith(f"tasks/{TASK_B}/") for p in on_hub) and "README.md" not in on_hub

    fake_hub.state.fail_commits = set()
    finished = push_dataset(src, REPO, limits=one_task_per_commit)  # the rerun completes the rest
    assert len(finished.commits) == 3 and not [p for p in finished.uploaded if p.startswith(f"tasks/{TASK_A}/")]


def test_a_failure_in_the_first_commit_leaves_the_repo_as_it_was(make_dataset: Callable[..., Path],
                                                                 fake_hub: Any, hub_kit: ModuleType) -> None:
    src = make_dataset()
    fake_hub.state.fail_commits = {1}
    result = invoke(push, [str(src), "--repo-id", REPO])
    line = one_error_line(result)
    assert "failed at commit 1 of 1" in line and "nothing was committed, the repo is as it was" in line
    assert hub_kit.TOKEN not in result.output
    assert set(fake_hub.state.files(REPO)) == {".gitattributes"}


def test_a_dataset_with_a_failed_task_is_refused_unless_included(make_dataset: Callable[..., Path], fake_hub: Any,
                                                                 hub_kit: ModuleType) -> None:
    src = make_dataset([hub_kit.FakeTask(TASK_A), hub_kit.FakeTask(TASK_B, validation=False)])
    line = one_error_line(invoke(push, [str(src), "--repo-id", REPO]))
    assert f"1 failed validation ({TASK_B})" in line and "--include-unvalidated" in line
    assert fake_hub.state.requests == []  # refused before any network call
    result = invoke(push, [str(src), "--repo-id", REPO, "--include-unvalidated"])
    assert result.exit_code == 0, result.output
    assert "warning: published 1 task(s) without a passing validation" in result.stderr


def _closed_port() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


@pytest.mark.parametrize("case, expected", [
    ("bad repo id", "error: bad repo id 'acme/widget tasks': expected org/name"),
    ("missing token", "error: no Hugging Face token: set HF_TOKEN or log in"),
    ("wrong token", "error: push to acme/widget-tasks failed before anything was uploaded: the Hub answered HTTP 401"),
    ("not a dataset", "error: not a repo2rlenv dataset:"),
    ("hub unreachable", "error: push to acme/widget-tasks failed before anything was uploaded: cannot reach the Hub"),
])
def test_push_errors_are_one_line_without_the_token(make_dataset: Callable[..., Path], fake_hub: Any,
                                                    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                    hub_kit: ModuleType, case: str, expected: str) -> None:
    src, repo = make_dataset(), REPO
    if case == "bad repo id":
        repo = "acme/widget tasks"
    elif case == "missing token":
        monkeypatch.delenv("HF_TOKEN")
    elif case == "wrong token":
        fake_hub.state.token = "hf_SomeOtherToken"
    elif case == "not a dataset":
        src = tmp_path / "empty"
        src.mkdir()
    elif case == "hub unreachable":
        monkeypatch.setenv("HF_ENDPOINT", _closed_port())
    result = invoke(push, [str(src), "--repo-id", repo])
    assert one_error_line(result).startswith(expected)
    assert hub_kit.TOKEN not in result.output


def test_pull_errors_are_one_line(fake_hub: Any, make_dataset: Callable[..., Path], tmp_path: Path) -> None:
    assert "pull of acme/nothing-here failed: the Hub answered HTTP 404" in \
        one_error_line(invoke(pull, ["acme/nothing-here", str(tmp_path / "a")]))
    push_dataset(make_dataset(), REPO)
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy/mine.txt").write_text("keep\n")
    assert "is not empty" in one_error_line(invoke(pull, [REPO, str(tmp_path / "busy")]))
    assert (tmp_path / "busy/mine.txt").read_text() == "keep\n"
    assert "pull of acme/widget-tasks failed: the Hub answered HTTP 404" in \
        one_error_line(invoke(pull, [REPO, str(tmp_path / "b"), "--revision", "no-such-branch"]))
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_pull_refuses_a_repo_that_is_not_a_published_dataset(fake_hub: Any, tmp_path: Path) -> None:
    from huggingface_hub import HfApi

    api = HfApi(endpoint=fake_hub.url)
    api.create_repo("acme/other", repo_type="dataset")
    api.upload_file(path_or_fileobj=b"hello\n", path_in_repo="tasks/x/notes.txt", repo_id="acme/other",
                    repo_type="dataset")
    line = one_error_line(invoke(pull, ["acme/other", str(tmp_path / "out")]))
    assert "acme/other does not hold a repo2rlenv dataset (no data/train-00000-of-00001.parquet)" in line
    assert not (tmp_path / "out").exists()


def test_push_in_a_fresh_process_reads_the_environment(make_dataset: Callable[..., Path], fake_hub: Any,
                                                       hub_kit: ModuleType) -> None:
    # A new interpreter: huggingface_hub reads HF_ENDPOINT and HF_HUB_DISABLE_XET at import, as for a user.
    src = make_dataset()
    env = {**os.environ, "HF_HUB_DISABLE_PROGRESS_BARS": "1"}
    code = "from repo2rlenv.cli.hub import push; push(prog_name='repo2rlenv push')"
    done = subprocess.run([sys.executable, "-c", code, str(src), "--repo-id", REPO, "--json"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert hub_kit.TOKEN not in done.stdout + done.stderr
    assert '"repo_id": "acme/widget-tasks"' in done.stdout
    assert fake_hub.state.commits[-1].lfs_added  # large files went through the LFS batch protocol


def test_the_commands_import_neither_datasets_nor_huggingface_hub() -> None:
    code = ("import sys, repo2rlenv.cli.hub; "
            "print(sorted(m for m in ('datasets', 'huggingface_hub', 'pyarrow') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stdout + done.stderr

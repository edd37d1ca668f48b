"""Opening local repos, plain directories and clones; snapshots at a ref."""

from __future__ import annotations

from pathlib import Path

import pytest

from repo2rlenv.errors import SourceError
from repo2rlenv.sources import resolve_commit, resolve_source, snapshot


def test_local_git_repo_snapshot_at_ref(make_repo, run_git, tmp_path: Path):
    git = run_git
    root = make_repo({"pkg/a.py": "X = 1\n"})
    first = git(root, "rev-parse", "HEAD").strip()
    (root / "pkg/a.py").write_text("X = 2\n")
    git(root, "commit", "-qam", "two")
    src = resolve_source(str(root))
    assert src.kind == "git" and src.has_git
    assert resolve_commit(src, None) == git(root, "rev-parse", "HEAD").strip()
    out = snapshot(src, resolve_commit(src, first), tmp_path / "snap")
    assert (out / "pkg/a.py").read_text() == "X = 1\n"
    assert not (out / ".git").exists()
    # The user's work tree is untouched.
    assert (root / "pkg/a.py").read_text() == "X = 2\n"


def test_a_clone_missing_a_files_contents_says_so_in_one_line(make_repo, run_git, tmp_path: Path):
    """A partial or damaged clone (here: one blob's object deleted) cannot be written out: a SourceError that
    names the file and what to do, not git's traceback ("internal error" before)."""
    root = make_repo({"pkg/a.py": "X = 1\n", "data/big.json": '{"k": 1}\n'})
    blob = run_git(root, "rev-parse", "HEAD:data/big.json").strip()
    (root / ".git" / "objects" / blob[:2] / blob[2:]).unlink()  # a fresh commit's objects are loose
    src = resolve_source(str(root))
    with pytest.raises(SourceError) as err:
        snapshot(src, resolve_commit(src, None), tmp_path / "snap")
    said = str(err.value)
    assert "data/big.json" in said and "partial or damaged clone" in said and "\n" not in said


def test_local_bare_clone_is_read_as_git(make_repo, run_git, tmp_path: Path):
    # A mirror is a bare clone: copying it as a plain directory would snapshot git's objects, not the code.
    root = make_repo({"pkg/a.py": "X = 1\n"})
    bare = tmp_path / "mirror.git"
    run_git(tmp_path, "clone", "-q", "--bare", str(root), str(bare))
    src = resolve_source(str(bare))
    assert src.kind == "git"
    out = snapshot(src, resolve_commit(src, None), tmp_path / "snap")
    assert (out / "pkg/a.py").read_text() == "X = 1\n"
    assert not (out / "HEAD").exists()


def test_plain_directory_copy_skips_caches(tmp_path: Path):
    root = tmp_path / "plain"
    (root / "pkg/__pycache__").mkdir(parents=True)
    (root / "pkg/a.py").write_text("X = 1\n")
    (root / "pkg/__pycache__/a.pyc").write_bytes(b"x")
    src = resolve_source(str(root))
    assert src.kind == "directory" and not src.has_git
    assert resolve_commit(src, None) is None
    with pytest.raises(SourceError, match="needs a git repository"):
        resolve_commit(src, "main")
    out = snapshot(src, None, tmp_path / "snap")
    assert (out / "pkg/a.py").exists() and not (out / "pkg/__pycache__").exists()


def test_clone_from_url_into_cache_and_reuse(make_repo, run_git, tmp_path: Path):
    git = run_git
    origin = make_repo({"m.py": "A = 1\n"}, name="origin")
    cache = tmp_path / "cache"
    url = f"file://{origin}"
    first = resolve_source(url, cache_dir=cache)
    assert first.kind == "remote" and first.path.is_dir()
    (origin / "m.py").write_text("A = 2\n")
    git(origin, "commit", "-qam", "two")
    again = resolve_source(url, cache_dir=cache)
    assert again.path == first.path  # same cache entry, fetched again
    assert resolve_commit(again, "main") == git(origin, "rev-parse", "HEAD").strip()


@pytest.mark.parametrize("spec", ["file:///nonexistent/repo.git"])
def test_unclonable_url_is_one_clear_error(spec, tmp_path: Path):
    with pytest.raises(SourceError, match="cannot clone"):
        resolve_source(spec, cache_dir=tmp_path)
    assert not any((tmp_path / "repos").glob("*.git")) if (tmp_path / "repos").exists() else True


def test_missing_path_and_bad_ref(make_repo, tmp_path: Path):
    with pytest.raises(SourceError, match="repository not found"):
        resolve_source(str(tmp_path / "nope"))
    root = make_repo({"a.py": ""})
    with pytest.raises(SourceError, match="ref 'v9' not found"):
        resolve_commit(resolve_source(str(root)), "v9")


def test_owner_name_maps_to_github_url(tmp_path: Path, monkeypatch):
    seen = {}

    def fake_clone(spec, url, cache_dir):  # below the clone boundary, crossed for real above
        seen["url"] = url
        raise SourceError("stop")

    monkeypatch.setattr("repo2rlenv.sources._clone_or_update", fake_clone)
    with pytest.raises(SourceError):
        resolve_source("pallets/click", cache_dir=tmp_path)
    assert seen["url"] == "https://github.com/pallets/click.git"


def test_a_failed_clone_says_gits_own_reason():
    from repo2rlenv.sources import git_cause

    # GitPython's shape: the stderr quoted after `stderr:`, progress first, the quote on a line of its own.
    stderr = ("\n  stderr: 'Cloning into bare repository '/c/x.git.partial'...\n"
              "fatal: unable to access 'https://github.com/o/n.git/': Could not resolve host: github.com\n'")
    assert git_cause(stderr) == "fatal: unable to access 'https://github.com/o/n.git/': Could not resolve host: github.com"
    stderr = ("\n  stderr: 'fatal: '/nope.git' does not appear to be a git repository\n"
              "fatal: Could not read from remote repository.\n\nPlease make sure you have the correct access rights\n'")
    assert git_cause(stderr) == "fatal: '/nope.git' does not appear to be a git repository"
    assert git_cause("\n  stderr: 'something odd\n'") == "something odd"
    assert git_cause("") == "git failed"

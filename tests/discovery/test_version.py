"""The version a VCS backend is told: the ref's latest tag, .git_archival.txt, PKG-INFO, else 0.0.0."""

from __future__ import annotations

import pytest

from repo2rlenv.discovery.version import FALLBACK_VERSION, choose_version, describe_tag, version_from_tag


@pytest.mark.parametrize("tag,version", [
    ("v1.2.3", "1.2.3"), ("1.0", "1.0"), ("release-2.0rc1", "2.0rc1"), ("pkg-3.1.post2", "3.1.post2"),
    ("stable", None), ("v1.2.3-beta", "1.2.3b0"),
])
def test_a_tag_names_its_pep440_version(tag, version):
    assert version_from_tag(tag) == version


def test_the_latest_reachable_tag_of_a_commit(make_repo, run_git):
    root = make_repo({"a.py": "1\n"})
    run_git(root, "tag", "v0.9")
    (root / "a.py").write_text("2\n")
    run_git(root, "commit", "-qam", "two")
    run_git(root, "tag", "v1.4.0")
    first = run_git(root, "rev-list", "--max-parents=0", "HEAD").strip()
    assert describe_tag(root, "HEAD") == "1.4.0"
    assert describe_tag(root, first) == "0.9"  # tags after the commit are not reachable from it
    assert describe_tag(root / "nothing-here", "HEAD") is None


def test_a_repo_without_tags_gives_no_hint(make_repo):
    assert describe_tag(make_repo({"a.py": ""}), "HEAD") is None


@pytest.mark.parametrize("files,hint,expected", [
    ({}, "3.0", ("3.0", "latest git tag reachable from the ref")),
    ({".git_archival.txt": "node: abc\ndescribe-name: v2.5.1-4-gabc1234\n"}, None, ("2.5.1", ".git_archival.txt")),
    ({".git_archival.txt": "node: abc\nref-names: HEAD -> main, tag: v2.6\n"}, None, ("2.6", ".git_archival.txt")),
    # Not expanded by `git archive` (no export-subst): worth nothing.
    ({".git_archival.txt": "describe-name: $Format:%(describe)$\n"}, None,
     (FALLBACK_VERSION, "no tag reachable from the ref (fallback)")),
    ({"PKG-INFO": "Metadata-Version: 2.1\nName: x\nVersion: 4.2\n"}, None, ("4.2", "PKG-INFO")),
    ({}, None, (FALLBACK_VERSION, "no tag reachable from the ref (fallback)")),
])
def test_choose_version_in_order(files, hint, expected, write_tree):
    assert choose_version(write_tree(files), hint) == expected

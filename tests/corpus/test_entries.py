"""Reading a corpus's list: specs, refs and per-repo options; every bad line one error naming it."""

from __future__ import annotations

from pathlib import Path

import pytest

from repo2rlenv.config import GenerateConfig
from repo2rlenv.corpus.driver import plan_corpus
from repo2rlenv.corpus.entries import (
    RepoEntry,
    corpus_entries,
    parse_line,
    read_repos_file,
)
from repo2rlenv.errors import ConfigError


def test_a_line_names_spec_ref_and_options(tmp_path):
    entry = parse_line("pallets/click ref=8.1.7 strategy=mutation limit=3 validate_tasks=false  # why", "f:1")
    assert entry == RepoEntry(spec="pallets/click", ref="8.1.7",
                              options={"strategy": "mutation", "limit": 3, "validate_tasks": False}, where="f:1")
    assert parse_line("   # only a comment", "f:2") is None
    assert parse_line("", "f:3") is None
    (tmp_path / "with space").mkdir()
    assert parse_line(f"'{tmp_path}/with space' ref=main", "f:4").spec == f"{tmp_path}/with space"


def test_relative_paths_are_read_from_the_files_directory(tmp_path, monkeypatch):
    (tmp_path / "lists").mkdir()
    (tmp_path / "repos" / "alpha").mkdir(parents=True)
    listing = tmp_path / "lists" / "corpus.txt"
    listing.write_text("../repos/alpha limit=2\nowner/name\n")
    monkeypatch.chdir("/")
    entries = read_repos_file(listing)
    assert entries[0].spec == str((tmp_path / "repos" / "alpha").resolve())
    assert entries[0].where == f"{listing}:1"
    assert entries[1].spec == "owner/name"


def test_names_are_readable_stable_and_tell_refs_apart():
    a = RepoEntry(spec="pallets/click")
    assert a.name.startswith("pallets__click-")
    assert a.name == RepoEntry(spec="pallets/click", where="other:9").name
    assert a.name != RepoEntry(spec="pallets/click", ref="8.1.7").name


@pytest.mark.parametrize("line, needle", [
    ("owner/name limit", "expected KEY=VALUE"),
    ("owner/name 3=x", "expected KEY=VALUE"),
    ("limit=3", "must start with the repository"),
    ("/no/such/dir/anywhere", "no such directory"),
    ("owner/name 'unclosed", "cannot read the line"),
])
def test_a_bad_line_is_one_error_naming_it(line, needle):
    with pytest.raises(ConfigError, match=needle) as info:
        parse_line(line, "corpus.txt:7")
    assert str(info.value).startswith("corpus.txt:7: ")


def test_lists_are_checked_whole(tmp_path):
    listing = tmp_path / "c.txt"
    listing.write_text("owner/a\nowner/b ref=v1\nowner/a\n")
    with pytest.raises(ConfigError, match=r"c.txt:3: owner/a is listed twice \(also .*c.txt:1\)"):
        corpus_entries([], listing)
    # The same repo at another ref is another entry; flags come after the file's lines.
    listing.write_text("owner/a\nowner/a ref=v1\n")
    assert [e.spec for e in corpus_entries(["owner/c"], listing)] == ["owner/a", "owner/a", "owner/c"]
    (tmp_path / "empty.txt").write_text("# nothing\n\n")
    with pytest.raises(ConfigError, match="lists no repository"):
        corpus_entries([], tmp_path / "empty.txt")
    with pytest.raises(ConfigError, match="--repos file not found"):
        corpus_entries([], tmp_path / "missing.txt")


def test_every_repos_options_are_validated_before_anything_runs(tmp_path):
    base = GenerateConfig(repo="owner/a", out=tmp_path / "out", pipeline_opts={"strategy": "mutation", "limit": 5})
    entries = [parse_line("owner/a", "c.txt:1"), parse_line("owner/b limit=2 siblings=1", "c.txt:2")]
    plan = plan_corpus(base, entries, max_tasks=None)
    assert plan.limits == {entries[0].name: 5, entries[1].name: 2}
    cfg = plan.configs[entries[1].name]
    assert cfg.repo == "owner/b" and cfg.pipeline_opts == {"strategy": "mutation", "limit": 2, "siblings": 1}
    assert cfg.out == tmp_path / "out" / "runs" / entries[1].name
    with pytest.raises(ConfigError, match=r"^c.txt:2: .*limit"):
        plan_corpus(base, [entries[0], parse_line("owner/b limit=0", "c.txt:2")], max_tasks=None)
    with pytest.raises(ConfigError, match=r"^c.txt:1: .*no_such_option"):
        plan_corpus(base, [parse_line("owner/a no_such_option=1", "c.txt:1")], max_tasks=None)
    with pytest.raises(ConfigError, match="--max-tasks must be at least 1"):
        plan_corpus(base, entries, max_tasks=0)
    assert not (tmp_path / "out").exists()  # checking writes nothing


def test_paths_are_plain_strings_in_the_plan(tmp_path):
    # A job crosses to Ray workers as JSON: the config must survive the trip unchanged.
    base = GenerateConfig(repo="owner/a", out=tmp_path / "out")
    plan = plan_corpus(base, [RepoEntry(spec="owner/a")], max_tasks=3)
    cfg = next(iter(plan.configs.values()))
    assert GenerateConfig.model_validate_json(cfg.model_dump_json()) == cfg
    assert isinstance(cfg.out, Path)


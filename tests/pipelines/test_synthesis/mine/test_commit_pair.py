"""The commit_pair miner on repos whose history each test scripts with real git, in both pairings:
`pair_base=commit` (A = the commit's tree, B = its source diff reversed) and `pair_base=ref` (A = the
ref's tree, B = the ref's file with the parent's function)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

import pytest

from repo2rlenv.baseline.coverage_map import CoverageMap, FileCoverage
from repo2rlenv.baseline.runner import BaselineReport
from repo2rlenv.config import GenerateConfig
from repo2rlenv.errors import SourceError
from repo2rlenv.generate import run_generate
from repo2rlenv.pipelines.test_synthesis.candidates import Candidate
from repo2rlenv.pipelines.test_synthesis.mine.commit_pair import CommitSkip, mine_commit_pairs
from repo2rlenv.pipelines.test_synthesis.mine.commit_source import is_note
from repo2rlenv.pipelines.test_synthesis.options import TestSynthesisOptions
from repo2rlenv.progress import Reporter
from repo2rlenv.sources import resolve_commit, resolve_source, snapshot
from repo2rlenv.verifiers.test_synthesis.verifier_patch import apply_diff

CORE = '''\
import typing as t

LIMIT = 10


def add(a, b):
    total = a + b
    return total


def scale(values, factor):
    out = []
    for v in values:
        out.append(v * factor)
    return out


def clamp(value, low, high):
    if value < low:
        return low
    if value > high:
        return high
    return value
'''
TESTS = "from tinypkg.core import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"
FILES = {
    "pyproject.toml": '[project]\nname = "tinypkg"\nversion = "0.0.1"\n',
    "tinypkg/__init__.py": "",
    "tinypkg/core.py": CORE,
    "tinypkg/util.py": "def twice(x):\n    y = x * 2\n    return y\n",
    "tests/test_core.py": TESTS,
}
# A buggy clamp: the fix commit in most tests turns it into CORE's.
BUGGY = CORE.replace("    if value > high:\n        return high", "    if value >= high:\n        return low")


class History:
    """A scripted repo: `commit({path: text}, message)` edits files, commits and returns the SHA."""

    def __init__(self, root: Path, git: Callable[..., str]):
        self.root, self.git = root, git

    def commit(self, files: dict[str, str | None], message: str = "change") -> str:
        for rel, text in files.items():
            path = self.root / rel
            if text is None:
                path.unlink()
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)
        self.git(self.root, "add", "-A")
        self.git(self.root, "commit", "-q", "-m", message)
        return self.head()

    def head(self) -> str:
        return self.git(self.root, "rev-parse", "HEAD").strip()


@pytest.fixture
def history(make_repo, run_git) -> Callable[..., History]:
    def build(**overrides: str) -> History:
        return History(make_repo({**FILES, **overrides}), run_git)

    return build


def baseline_for(*paths: str) -> BaselineReport:
    """A hand-made baseline in which the suite imports `paths` (every line executable, the first run)."""
    files = {p: FileCoverage(executable=list(range(1, 40)), executed=[1]) for p in paths}
    return BaselineReport(total=1, stable_passing=["tests/test_core.py::test_add"], quarantined={},
                          coverage=CoverageMap(files=files), duration_sec=0.0)


def mine(repo: Path, tmp_path: Path, *, baseline: BaselineReport | None = None, import_roots=("",),
         first_parent: bool = True, **opts) -> tuple[list[Candidate], dict[str, int], int]:
    source = resolve_source(str(repo))
    ref = resolve_commit(source, None)
    a_dir = snapshot(source, ref, tmp_path / f"a-{repo.name}-{len(list(tmp_path.iterdir()))}")
    roots = list(import_roots)
    pkg = "src/tinypkg" if roots == ["src"] else "tinypkg"
    cands, skipped, scanned = mine_commit_pairs(
        source, ref, a_dir, baseline or baseline_for(f"{pkg}/core.py", f"{pkg}/util.py"),
        TestSynthesisOptions(**opts), roots, first_parent=first_parent)
    return cands, dict(skipped), scanned


def key(reason: CommitSkip) -> str:
    return f"commit: {reason.value}"


@pytest.mark.parametrize("pair_base", ["commit", "ref"])
def test_a_fix_without_tests_becomes_a_candidate(history, tmp_path, pair_base):
    repo = history(**{"tinypkg/core.py": BUGGY})
    fix = repo.commit({"tinypkg/core.py": CORE}, "fix clamp")
    (cand,), skipped, scanned = mine(repo.root, tmp_path, pair_base=pair_base)
    assert scanned == 2 and skipped == {key(CommitSkip.root): 1}
    assert cand.strategy == "commit_pair" and cand.commit == fix
    assert (cand.function.path, cand.function.qualname, cand.function.module) == (
        "tinypkg/core.py", "clamp", "tinypkg.core")
    assert cand.files_b == {"tinypkg/core.py": BUGGY}
    assert "-    if value > high:\n-        return high\n+    if value >= high:\n+        return low\n" in cand.diff
    assert CORE.splitlines()[cand.line - 1] == "    if value > high:"


def _drop_cases() -> list[tuple[str, dict[str, str], dict[str, object], CommitSkip]]:
    """(case, files the commit writes, options, the reason it is dropped for); the parent is FILES."""
    return [
        ("docstring only", {"tinypkg/core.py": CORE.replace("    total =", '    """Sum."""\n    total =')}, {},
         CommitSkip.cosmetic),
        ("formatting only", {"tinypkg/core.py": CORE.replace("a + b", "(a +\n             b)  # sum")}, {},
         CommitSkip.cosmetic),
        ("typing only", {"tinypkg/core.py": CORE.replace("def add(a, b):", "def add(a: int, b: int) -> int:")
                         .replace("total = a + b", "total: int = a + b")
                         .replace("return total", "return t.cast(int, total)")}, {}, CommitSkip.cosmetic),
        ("too many files", {"tinypkg/core.py": BUGGY, "tinypkg/util.py": "def twice(x):\n    return x + x\n"},
         {"max_files": 1}, CommitSkip.too_many_files),
        ("too many lines", {"tinypkg/core.py": BUGGY}, {"max_lines": 3}, CommitSkip.too_many_lines),
        ("no package source", {"README.md": "hi\n", "docs/conf.py": "x = 1\n"}, {}, CommitSkip.no_source),
        ("module level only", {"tinypkg/core.py": CORE.replace("LIMIT = 10", "LIMIT = 11")}, {},
         CommitSkip.no_function),
        ("new function only", {"tinypkg/core.py": CORE + "\n\ndef new(x):\n    y = x\n    return y\n"}, {},
         CommitSkip.no_function),
    ]


@pytest.mark.parametrize("pair_base", ["commit", "ref"])
@pytest.mark.parametrize("case,files,opts,reason", _drop_cases(), ids=[c[0] for c in _drop_cases()])
def test_commits_are_dropped_with_their_reason(history, tmp_path, case, files, opts, reason, pair_base):
    repo = history()
    repo.commit(files, case)
    cands, skipped, _ = mine(repo.root, tmp_path, pair_base=pair_base, **opts)
    assert cands == []
    assert skipped == {key(reason): 1, key(CommitSkip.root): 1}


def test_a_change_touching_tests_is_dropped_against_the_ref(history, tmp_path):
    repo = history()
    repo.commit({"tinypkg/core.py": BUGGY, "tests/test_core.py": TESTS + "# more\n"}, "test touched")
    cands, skipped, _ = mine(repo.root, tmp_path, pair_base="ref")
    assert cands == [] and skipped == {key(CommitSkip.touches_tests): 1, key(CommitSkip.root): 1}


def test_a_change_carrying_its_own_tests_keeps_the_parents_tests_for_a(history, tmp_path):
    repo = history(**{"tinypkg/core.py": BUGGY})
    new_test = "from tinypkg.core import clamp\n\n\ndef test_high():\n    assert clamp(9, 0, 5) == 5\n"
    fix = repo.commit({"tinypkg/core.py": CORE, "tests/test_core.py": TESTS + "# edited\n",
                       "tests/test_clamp.py": new_test}, "fix clamp, with tests")
    (cand,), skipped, _ = mine(repo.root, tmp_path)
    assert cand.commit == fix and cand.function.qualname == "clamp" and cand.files_b == {"tinypkg/core.py": BUGGY}
    assert cand.test_files == ["tests/test_clamp.py", "tests/test_core.py"]
    # A gets the parent's tests back (an added file goes away); the change's own are the oracle's source.
    assert cand.tests_a == {"tests/test_core.py": TESTS, "tests/test_clamp.py": None}
    assert cand.tests_change == {"tests/test_core.py": TESTS + "# edited\n", "tests/test_clamp.py": new_test}
    assert "tests/" not in cand.diff and "tests_a" not in cand.model_dump_json()


def test_a_changes_changelog_news_and_docs_come_from_the_parent(history, tmp_path):
    repo = history(**{"tinypkg/core.py": BUGGY, "CHANGES.rst": "Version 1\n", "docs/api.rst": "clamp\n"})
    repo.commit({"tinypkg/core.py": CORE, "CHANGES.rst": "Version 2\n- Fix clamp at the top.\n",
                 "docs/api.rst": "clamp returns high above it\n", "changes/12.bugfix": "clamp fixed\n",
                 "README.md": "hello\n"}, "fix clamp, noted")
    (cand,), _, _ = mine(repo.root, tmp_path)
    # The news fragment the change added goes; README is no changelog and stays as the change left it.
    assert cand.notes_a == {"CHANGES.rst": "Version 1\n", "docs/api.rst": "clamp\n", "changes/12.bugfix": None}
    assert cand.test_files == [] and "notes_a" not in cand.model_dump_json()


@pytest.mark.parametrize("path,note", [
    ("CHANGES.rst", True), ("CHANGELOG.md", True), ("HISTORY.txt", True), ("NEWS", True),
    ("changelog.d/123.fix.md", True), ("newsfragments/1.feature", True), ("docs/index.rst", True),
    ("README.md", False), ("src/pkg/changes.py", False), ("tests/test_changes.py", False),
])
def test_which_paths_describe_a_change(path, note):
    assert is_note(path) is note


def _apply(cand: Candidate, tree: dict[str, str]) -> dict[str, str | None]:
    return apply_diff(cand.diff, tree)


def test_touched_function_is_the_one_with_most_changed_lines(history, tmp_path):
    repo = history()
    new_core = CORE.replace("a + b", "a - b").replace("    for v in values:\n        out.append(v * factor)",
                                                      "    for v in values[1:]:\n        out.append(v + factor)")
    repo.commit({"tinypkg/core.py": new_core})
    (cand,), _, _ = mine(repo.root, tmp_path)
    assert cand.function.qualname == "scale"
    # The unit changes add too: B puts back scale alone, so that B differs from A in the function the
    # task names (the record says what else the unit changed).
    assert cand.files_b == {"tinypkg/core.py": CORE.replace("a + b", "a - b")}
    assert _apply(cand, {"tinypkg/core.py": new_core}) == cand.files_b
    assert [(g.gate, g.detail) for g in cand.gates] == [("B reverses F alone", "the unit also changes tinypkg/core.py::add")]
    (cand,), _, _ = mine(repo.root, tmp_path, pair_base="ref")
    # Against the ref only scale goes back to the parent's version: add keeps the ref's body.
    assert cand.files_b["tinypkg/core.py"] == CORE.replace("a + b", "a - b")


def test_a_function_changed_again_later_is_mined_at_its_own_commit_only_with_pair_base_commit(history, tmp_path):
    repo = history(**{"tinypkg/core.py": BUGGY})
    first = repo.commit({"tinypkg/core.py": CORE}, "fix clamp")
    later = CORE.replace("if value < low:", "if value <= low:")
    second = repo.commit({"tinypkg/core.py": later}, "clamp again")
    cands, skipped, _ = mine(repo.root, tmp_path)
    assert [c.commit for c in cands] == [second, first]
    # Each pair is a patch of its own commit's tree.
    assert cands[1].files_b == {"tinypkg/core.py": BUGGY}
    assert _apply(cands[1], {"tinypkg/core.py": CORE}) == {"tinypkg/core.py": BUGGY}
    cands, skipped, _ = mine(repo.root, tmp_path, pair_base="ref")
    assert [c.commit for c in cands] == [second]
    assert skipped[key(CommitSkip.changed_since)] == 1


def test_with_pair_base_ref_candidates_are_patches_of_the_ref(history, tmp_path):
    repo = history(**{"tinypkg/core.py": BUGGY})
    old = repo.commit({"tinypkg/core.py": CORE}, "fix clamp")
    ref_core = CORE.replace("a + b", "b + a")
    new = repo.commit({"tinypkg/core.py": ref_core}, "change add")
    cands, _, _ = mine(repo.root, tmp_path, pair_base="ref")
    assert [(c.commit, c.function.qualname) for c in cands] == [(new, "add"), (old, "clamp")]
    # The older pair carries the newer commit's add: B differs from the ref in clamp only.
    assert cands[1].files_b["tinypkg/core.py"] == BUGGY.replace("a + b", "b + a")
    cands, _, _ = mine(repo.root, tmp_path)
    assert [(c.commit, c.function.qualname) for c in cands] == [(new, "add"), (old, "clamp")]
    assert cands[1].files_b["tinypkg/core.py"] == BUGGY


@pytest.mark.parametrize("pair_base", ["commit", "ref"])
def test_b_is_a_source_only_patch(history, tmp_path, pair_base):
    repo = history(**{"tinypkg/core.py": BUGGY})
    fix = repo.commit({"tinypkg/core.py": CORE, "pyproject.toml": FILES["pyproject.toml"] + "# deps v2\n",
                       "requirements.txt": "attrs\n"}, "fix clamp, bump dependencies")
    (cand,), _, _ = mine(repo.root, tmp_path, pair_base=pair_base)
    assert cand.commit == fix and list(cand.files_b) == ["tinypkg/core.py"]
    assert "pyproject" not in cand.diff and "requirements" not in cand.diff


def test_with_pair_base_commit_every_touched_source_file_goes_back(history, tmp_path):
    # The fix edits clamp, rewrites util.twice, deletes a helper module and adds another.
    repo = history(**{"tinypkg/core.py": BUGGY, "tinypkg/old_helper.py": "def gone(x):\n    y = x\n    return y\n"})
    new_util = "FACTOR = 2\n\n\n" + FILES["tinypkg/util.py"]  # no other function changes: the whole diff goes back
    repo.commit({"tinypkg/core.py": CORE, "tinypkg/util.py": new_util, "tinypkg/old_helper.py": None,
                 "tinypkg/new_helper.py": "def fresh(x):\n    return x\n"}, "fix clamp and tidy")
    (cand,), _, _ = mine(repo.root, tmp_path, max_files=4)
    assert cand.function.qualname == "clamp" and cand.gates == []
    assert cand.files_b == {"tinypkg/core.py": BUGGY, "tinypkg/util.py": FILES["tinypkg/util.py"],
                            "tinypkg/old_helper.py": "def gone(x):\n    y = x\n    return y\n"}
    a_tree = {"tinypkg/core.py": CORE, "tinypkg/util.py": new_util}
    # The deleted module comes back (a /dev/null diff); the added one stays, so B needs no deletion.
    assert _apply(cand, a_tree) == cand.files_b
    assert "--- /dev/null\n+++ b/tinypkg/old_helper.py" in cand.diff and "new_helper" not in cand.diff


def test_parent_using_a_name_the_ref_lacks_is_dropped_only_against_the_ref(history, tmp_path):
    before = CORE.replace("LIMIT = 10", "def _cap():\n    return 10").replace("value > high", "value > _cap()")
    repo = history(**{"tinypkg/core.py": before})
    repo.commit({"tinypkg/core.py": CORE.replace("value > high", "value > LIMIT")}, "drop _cap")
    cands, skipped, _ = mine(repo.root, tmp_path, pair_base="ref")
    assert cands == [] and skipped[key(CommitSkip.missing_names)] == 1
    # With the parent's whole file as B, _cap comes back with the function that uses it.
    (cand,), _, _ = mine(repo.root, tmp_path)
    assert cand.files_b == {"tinypkg/core.py": before}


def test_several_functions_whose_main_ones_parent_needs_a_removed_name_are_dropped(history, tmp_path):
    # clamp's parent calls _cap, which the commit removed while also changing add: the parent's clamp
    # cannot stand alone in the commit's file.
    before = (CORE.replace("LIMIT = 10", "def _cap():\n    return 10").replace("value > high", "value > _cap() and value > high")
              .replace("value < low", "value < low + _cap() - _cap()"))
    repo = history(**{"tinypkg/core.py": before})
    repo.commit({"tinypkg/core.py": CORE.replace("a + b", "b + a - 0")}, "drop _cap, touch add")
    cands, skipped, _ = mine(repo.root, tmp_path)
    assert cands == [] and skipped[key(CommitSkip.several_unfit)] == 1


@pytest.mark.parametrize("measured", ["absent", "listed but never executed"])
def test_module_the_suite_never_imports_is_dropped_by_the_miner_against_the_ref(history, tmp_path, measured):
    # With pair_base=commit the suite at the commit decides this (commit_driver), not the ref's baseline.
    repo = history(**{"tinypkg/core.py": BUGGY})
    repo.commit({"tinypkg/core.py": CORE})
    baseline = baseline_for("tinypkg/util.py")
    if measured != "absent":  # coverage.py lists files under `source` that nothing imported
        baseline.coverage.files["tinypkg/core.py"] = FileCoverage(executable=[1, 2], executed=[])
    cands, skipped, _ = mine(repo.root, tmp_path, baseline=baseline, pair_base="ref")
    assert cands == [] and skipped[key(CommitSkip.not_imported)] == 1
    assert len(mine(repo.root, tmp_path, baseline=baseline)[0]) == 1


def test_a_trivial_function_at_the_commit_is_not_a_target(history, tmp_path):
    repo = history(**{"tinypkg/util.py": "def twice(x):\n    return x * 2\n\n\ndef stub():\n    return 1\n"})
    repo.commit({"tinypkg/util.py": "def twice(x):\n    return x * 2\n\n\ndef stub():\n    return 2\n"})
    cands, skipped, _ = mine(repo.root, tmp_path)  # min_loc = 2: a one-line body is too short
    assert cands == [] and skipped[key(CommitSkip.not_eligible)] == 1


def test_a_commit_from_before_a_layout_move_maps_by_module(history, tmp_path, run_git):
    repo = history(**{"tinypkg/core.py": BUGGY})
    fix = repo.commit({"tinypkg/core.py": CORE}, "fix clamp")
    (repo.root / "src").mkdir()
    run_git(repo.root, "mv", "tinypkg", "src/tinypkg")
    repo.commit({}, "src layout")
    cands, skipped, _ = mine(repo.root, tmp_path, import_roots=["src"], pair_base="ref")
    assert [(c.commit, c.function.path) for c in cands] == [(fix, "src/tinypkg/core.py")]
    assert cands[0].files_b == {"src/tinypkg/core.py": BUGGY}
    # At its own commit the module still lived at the old path.
    (cand,), _, _ = mine(repo.root, tmp_path, import_roots=["src"])
    assert (cand.commit, cand.function.path, cand.function.module) == (fix, "tinypkg/core.py", "tinypkg.core")
    assert cand.files_b == {"tinypkg/core.py": BUGGY}


@pytest.fixture
def dated(history, monkeypatch) -> tuple[History, dict[str, str]]:
    """Three fixes, one per year 2021–2023, on a 2020 initial commit; returns the repo and year → SHA."""
    monkeypatch.setenv("GIT_AUTHOR_DATE", "2020-01-01T12:00:00")
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2020-01-01T12:00:00")
    repo = history(**{"tinypkg/core.py": BUGGY.replace("a + b", "a - b")})
    text = BUGGY.replace("a + b", "a - b")
    shas = {}
    for year, (old, new) in zip(("2021", "2022", "2023"), [("a - b", "a + b"), ("v * factor", "factor * v"),
                                                        (BUGGY, CORE)]):
        monkeypatch.setenv("GIT_AUTHOR_DATE", f"{year}-01-01T12:00:00")
        monkeypatch.setenv("GIT_COMMITTER_DATE", f"{year}-01-01T12:00:00")
        text = text.replace(old, new) if old != BUGGY else text.replace(
            "    if value >= high:\n        return low", "    if value > high:\n        return high")
        shas[year] = repo.commit({"tinypkg/core.py": text}, f"fix {year}")
    return repo, shas


@pytest.mark.parametrize("opts,years,scanned", [
    ({}, ["2023", "2022", "2021"], 4),
    ({"since": "2021-06-01"}, ["2023", "2022"], 2),
    ({"until": "2022-06-01"}, ["2022", "2021"], 3),
    ({"since": "2021-06-01", "until": "2022-06-01"}, ["2022"], 1),
    ({"max_commits": 2}, ["2023", "2022"], 2),
])
def test_since_until_and_max_commits_bound_the_walk(dated, tmp_path, opts, years, scanned):
    repo, shas = dated
    cands, _, walked = mine(repo.root, tmp_path, **opts)
    assert [c.commit for c in cands] == [shas[y] for y in years]
    assert walked == scanned


def _pull_request_history(history, run_git) -> tuple[History, dict[str, str]]:
    """main: a broken add and clamp; a side branch fixes add in two commits (one cosmetic); main fixes clamp
    meanwhile; the branch lands as a --no-ff merge (a pull request)."""
    repo = history(**{"tinypkg/core.py": BUGGY.replace("a + b", "a - b")})
    run_git(repo.root, "checkout", "-q", "-b", "feature")
    side = repo.commit({"tinypkg/core.py": BUGGY}, "fix add on a branch")
    tidy = repo.commit({"tinypkg/core.py": BUGGY.replace("    total =", "    # sum\n    total =")}, "tidy")
    run_git(repo.root, "checkout", "-q", "main")
    main_fix = repo.commit({"tinypkg/core.py": CORE.replace("a + b", "a - b")}, "fix clamp on main")
    run_git(repo.root, "merge", "-q", "--no-ff", "-m", "Merge pull request #1 from feature", "feature")
    return repo, {"side": side, "tidy": tidy, "main_fix": main_fix, "merge": repo.head()}


def test_a_merged_pull_request_is_one_unit_against_its_first_parent(history, tmp_path, run_git):
    repo, shas = _pull_request_history(history, run_git)
    cands, skipped, scanned = mine(repo.root, tmp_path)
    # The merge is read against main's state before it: the pull request's whole change (add fixed),
    # and its side commits are never walked, so nothing is counted twice.
    assert [c.commit for c in cands] == [shas["merge"], shas["main_fix"]] and scanned == 3
    assert skipped == {key(CommitSkip.root): 1}
    merged = cands[0]
    assert merged.function.qualname == "add" and merged.files_b["tinypkg/core.py"] == CORE.replace("a + b", "a - b")
    assert "-    total = a + b\n+    total = a - b\n" in merged.diff


def test_walking_every_parent_skips_merges_and_reads_side_commits(history, tmp_path, run_git):
    repo, shas = _pull_request_history(history, run_git)
    cands, skipped, scanned = mine(repo.root, tmp_path, first_parent=False)
    assert {c.commit for c in cands} == {shas["main_fix"], shas["side"]} and scanned == 5
    assert skipped == {key(CommitSkip.merge): 1, key(CommitSkip.cosmetic): 1, key(CommitSkip.root): 1}


def test_squash_merged_history_is_plain_commits(history, tmp_path, run_git):
    repo = history(**{"tinypkg/core.py": BUGGY.replace("a + b", "a - b")})
    run_git(repo.root, "checkout", "-q", "-b", "feature")
    repo.commit({"tinypkg/core.py": BUGGY}, "fix add on a branch")
    run_git(repo.root, "checkout", "-q", "main")
    run_git(repo.root, "merge", "-q", "--squash", "feature")
    run_git(repo.root, "commit", "-q", "-m", "Fix add (#1)")
    squashed = repo.head()
    (cand,), skipped, scanned = mine(repo.root, tmp_path)
    assert cand.commit == squashed and cand.function.qualname == "add" and scanned == 2


def test_plain_directory_is_a_clear_source_error(make_repo, tmp_path):
    root = make_repo(FILES, commit=False)
    source = resolve_source(str(root))
    with pytest.raises(SourceError, match="commit_pair needs git history"):
        mine_commit_pairs(source, None, root, baseline_for("tinypkg/core.py"), TestSynthesisOptions(), [""])


def test_shallow_clone_ending_before_any_candidate_is_a_clear_error(history, tmp_path, run_git):
    repo = history(**{"tinypkg/core.py": BUGGY})
    repo.commit({"tinypkg/core.py": CORE}, "fix clamp")
    run_git(tmp_path, "clone", "-q", "--depth", "1", f"file://{repo.root}", "shallow1")
    with pytest.raises(SourceError, match=r"shallow clone: its history ends at \w{12} after 1 commit"):
        mine(tmp_path / "shallow1", tmp_path)


def test_shallow_clone_deep_enough_works(history, tmp_path, run_git):
    repo = history(**{"tinypkg/core.py": BUGGY})
    fix = repo.commit({"tinypkg/core.py": CORE}, "fix clamp")
    run_git(tmp_path, "clone", "-q", "--depth", "2", f"file://{repo.root}", "shallow2")
    (cand,), skipped, _ = mine(tmp_path / "shallow2", tmp_path)
    assert cand.commit == fix and skipped == {key(CommitSkip.shallow_boundary): 1}


def test_detached_head_works(history, tmp_path, run_git):
    repo = history(**{"tinypkg/core.py": BUGGY})
    fix = repo.commit({"tinypkg/core.py": CORE}, "fix clamp")
    run_git(repo.root, "checkout", "-q", "--detach", "HEAD")
    assert run_git(repo.root, "rev-parse", "--abbrev-ref", "HEAD").strip() == "HEAD"
    (cand,), _, _ = mine(repo.root, tmp_path)
    assert cand.commit == fix


PRICING = '''\
def bulk_price(quantity):
    if quantity <= 0:
        raise ValueError("quantity must be positive")
    if quantity > 100:
        return quantity * 8
    return quantity * 10
'''


@pytest.mark.slow
def test_generate_with_commit_pair_emits_a_task_from_history(make_repo, run_git, tmp_path, r2e_cache):
    # The fix (>= → >) changes behaviour at quantity 100 only, which the existing tests never try.
    root = make_repo({
        "pyproject.toml": FILES["pyproject.toml"] + '[build-system]\nrequires = ["setuptools>=61"]\n'
                          'build-backend = "setuptools.build_meta"\n',
        "tinypkg/__init__.py": "",
        "tinypkg/price.py": PRICING.replace("quantity > 100", "quantity >= 100"),
        "tests/test_price.py": "from tinypkg.price import bulk_price\n\n\ndef test_few():\n"
                               "    assert bulk_price(3) == 30\n\n\ndef test_many():\n"
                               "    assert bulk_price(200) == 1600\n",
    })
    fix = History(root, run_git).commit({"tinypkg/price.py": PRICING}, "fix the boundary")
    config = GenerateConfig(repo=str(root), out=tmp_path / "dataset", sandbox="local", cache_dir=r2e_cache,
                            pipeline_opts={"strategy": "commit_pair", "limit": 1})
    result = run_generate(config, Reporter(quiet=True))
    assert len(result.emitted) == 1
    cands = [Candidate.model_validate_json(line)
             for line in (tmp_path / "dataset" / "candidates.jsonl").read_text().splitlines()]
    (emitted,) = [c for c in cands if c.status == "emitted"]
    assert emitted.strategy == "commit_pair" and emitted.commit == fix
    assert emitted.function.qualname == "bulk_price" and emitted.killed is False
    # Its siblings are mutants of bulk_price in the commit's tree that the suite misses (`quantity <= 0`
    # → `< 0` among them): the task grades like a mutation task.
    from repo2rlenv.dataset.taskdir import DatasetPaths

    task = DatasetPaths(tmp_path / "dataset").task(emitted.task_id)
    assert len(list(task.siblings.glob("*.diff"))) >= 1
    # What the change said of itself is kept where B is, for the audit.
    from repo2rlenv.dataset.change_record import ChangeRecord

    change = ChangeRecord.read(task.change)
    assert change is not None and change.commit == fix and change.subject == "fix the boundary"


@pytest.mark.slow
def test_generate_pairs_an_older_commit_at_its_own_tree_and_environment(make_repo, run_git, tmp_path, r2e_cache):
    # The fix is followed by a release that bumps the project's version (a dependency file) and rewrites
    # bulk_price without changing what it does. Against the ref the fix could not be mined (its function
    # changed since); at its own commit it becomes a task, gated in its own environment.
    pyproject = FILES["pyproject.toml"] + '[build-system]\nrequires = ["setuptools>=61"]\n' \
                                          'build-backend = "setuptools.build_meta"\n'
    root = make_repo({
        "pyproject.toml": pyproject, "tinypkg/__init__.py": "",
        "tinypkg/price.py": PRICING.replace("quantity > 100", "quantity >= 100"),
        "tests/test_price.py": "from tinypkg.price import bulk_price\n\n\ndef test_few():\n"
                               "    assert bulk_price(3) == 30\n\n\ndef test_many():\n"
                               "    assert bulk_price(200) == 1600\n",
    })
    repo = History(root, run_git)
    fix = repo.commit({"tinypkg/price.py": PRICING}, "fix the boundary")
    release = repo.commit({"tinypkg/price.py": PRICING.replace("quantity * 10", "10 * quantity"),
                           "pyproject.toml": pyproject.replace("0.0.1", "0.0.2")}, "release 0.0.2")
    out = tmp_path / "dataset"
    config = GenerateConfig(repo=str(root), out=out, sandbox="local", cache_dir=r2e_cache,
                            pipeline_opts={"strategy": "commit_pair", "limit": 2})
    result = run_generate(config, Reporter(quiet=True))
    cands = {c.commit: c for c in (Candidate.model_validate_json(line)
                                   for line in (out / "candidates.jsonl").read_text().splitlines())}
    assert cands[release].status == "dropped" and cands[release].skip_reason == "no distinguishing input found"
    assert cands[fix].status == "emitted" and result.emitted == [cands[fix].task_id]
    task = out / "tasks" / cands[fix].task_id
    toml = (task / "task.toml").read_text()
    assert f'ref = "{fix}"' in toml and f'commit = "{fix}"' in toml
    # The task's environment is the fix's tree, dependency files included, and B applies to it.
    repo_dir = task / "environment" / "repo"
    assert (repo_dir / "tinypkg/price.py").read_text() == PRICING
    assert (repo_dir / "pyproject.toml").read_text() == pyproject
    assert apply_diff((task / "tests" / "broken_patch.diff").read_text(), {"tinypkg/price.py": PRICING}) == {
        "tinypkg/price.py": PRICING.replace("quantity > 100", "quantity >= 100")}
    summary = json.loads((out / "summary.json").read_text())
    envs = summary["commit_pair"]["environment_of"]
    assert envs[fix] != envs[release] and len(summary["commit_pair"]["environments"]) == 2
    assert cands[fix].gates[0].gate == "environment" and cands[fix].gates[0].detail == envs[fix]
    # A rerun finds the task by the same id and redoes nothing.
    again = run_generate(config, Reporter(quiet=True))
    assert again.emitted == result.emitted and again.stages["resumed"] == 2 and again.stages["gated"] == 0

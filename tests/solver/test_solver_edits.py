"""Applying edits: the unique-match rule, the context shown when it fails, path policies, all-or-nothing."""

from __future__ import annotations

import pytest

from repo2rlenv.solver.edits import (
    EditFailure,
    NewTestFiles,
    OnlyPaths,
    apply_edits,
    apply_one,
    clean_path,
)
from repo2rlenv.solver.replies import SearchReplace, WholeFile

TEXT = "".join(f"line {n}\n" for n in range(1, 21)).replace("line 12\n", "    total = price * qty\n")


def _edit(search: str, replace: str = "X\n", path: str = "tests/test_a.py") -> SearchReplace:
    return SearchReplace(path=path, search=search, replace=replace)


def test_a_unique_match_is_replaced():
    assert apply_one(_edit("line 3\nline 4\n", "three\n"), TEXT) == TEXT.replace("line 3\nline 4\n", "three\n")


def test_no_match_shows_the_closest_region_as_the_file_has_it():
    error = apply_one(_edit("total = price * quantity\n"), TEXT)
    assert error.failure is EditFailure.NO_MATCH
    assert "closest lines (12-12)" in error.message
    assert "12 |     total = price * qty" in error.message
    assert "9 | line 9" in error.message and "15 | line 15" in error.message  # three lines either side
    assert "8 | line 8" not in error.message


def test_several_matches_show_each_occurrence_with_its_line():
    text = "a = 1\nb = 2\na = 1\nc = 3\na = 1\n"
    error = apply_one(_edit("a = 1\n"), text)
    assert error.failure is EditFailure.AMBIGUOUS
    assert "occurs 3 times" in error.message
    assert [f"occurrence at line {n}:" in error.message for n in (1, 3, 5)] == [True, True, True]


@pytest.mark.parametrize(("edit", "current", "failure"), [
    (_edit("x\n"), None, EditFailure.MISSING_FILE),
    (_edit("  \n"), "x\n", EditFailure.EMPTY_SEARCH),
])
def test_edits_that_cannot_apply(edit, current, failure):
    assert apply_one(edit, current).failure is failure


def test_a_whole_file_gets_a_final_newline():
    assert apply_one(WholeFile(path="t.py", content="x = 1"), None) == "x = 1\n"


@pytest.mark.parametrize(("path", "clean"), [
    ("tests/test_a.py", "tests/test_a.py"), ("/workspace/tests/test_a.py", "tests/test_a.py"),
    ("./tests/test_a.py", "tests/test_a.py"), ("`tests/test_a.py`", "tests/test_a.py"),
    ("../etc/passwd", None), ("/etc/passwd", None), ("tests/../../x.py", None), ("", None),
])
def test_clean_path(path, clean):
    assert clean_path(path, "/workspace") == clean


def test_policies():
    only = OnlyPaths(["tests/test_a.py"])
    assert only.refuse("tests/test_a.py") is None
    assert "only tests/test_a.py may be written" in only.refuse("tests/conftest.py")
    new = NewTestFiles(["tests/test_old.py"])
    assert new.refuse("tests/unit/test_new.py") is None
    assert "already has" in new.refuse("tests/test_old.py")
    for refused in ("tests/conftest.py", "src/pkg/test_x.py", "test_top.py", "tests/test_x.txt"):
        assert "only new test files" in new.refuse(refused)


def test_a_reply_applies_all_or_nothing():
    files = {"tests/test_a.py": "a = 1\nb = 2\n"}
    edits = [_edit("a = 1\n", "a = 10\n"), _edit("zzz\n")]
    changed, errors = apply_edits(edits, files.get, OnlyPaths(["tests/test_a.py"]), "/workspace")
    assert changed == {} and [e.failure for e in errors] == [EditFailure.NO_MATCH]
    edits = [WholeFile(path="/workspace/tests/test_a.py", content="a = 1\n"), _edit("a = 1\n", "a = 2\n")]
    changed, errors = apply_edits(edits, files.get, OnlyPaths(["tests/test_a.py"]), "/workspace")
    assert errors == [] and changed == {"tests/test_a.py": "a = 2\n"}
    changed, errors = apply_edits([WholeFile(path="setup.py", content="")], files.get,
                                  OnlyPaths(["tests/test_a.py"]), "/workspace")
    assert changed == {} and errors[0].failure is EditFailure.FORBIDDEN_PATH

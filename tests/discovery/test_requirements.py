"""One requirement line → installable here, extras of the project itself, an include, or dropped."""

from __future__ import annotations

import pytest

from repo2rlenv.discovery.requirements import classify, logical_lines, read_requirement_file


@pytest.mark.parametrize("line,kind,value", [
    ("pytest>=7  # the runner", "req", "pytest>=7"),
    ("attrs==21.4.0 --hash=sha256:abc", "req", "attrs==21.4.0"),
    ("tomli; python_version < '3.11'", "req", "tomli; python_version < '3.11'"),
    ("-r more.txt", "include", "more.txt"),
    ("--requirement=more.txt", "include", "more.txt"),
    (".", "extras", ()),
    (".[test,docs]", "extras", ("test", "docs")),
    ("-e .[test]", "extras", ("test",)),
    ("mypkg[fast]", "extras", ("fast",)),  # the project itself, by name
    ("-e ../sibling", "drop", "an editable install of a path"),
    ("./vendored/lib", "drop", "a local path (outside what the snapshot installs)"),
    ("{posargs}", "drop", "a tox/nox/pdm substitution that only that tool can expand"),
    ("-c constraints.txt", "drop", "a constraints file (versions only, nothing to install)"),
    ("--index-url https://example.invalid/simple", "drop", "a pip option, not a requirement"),
    ("git+https://example.invalid/x.git", "drop", "a URL requirement (not from a package index)"),
    ("x @ https://example.invalid/x.whl", "drop", "a URL requirement (not from a package index)"),
    ("not a requirement!", "drop", "not a requirement pip understands"),
])
def test_classify(line, kind, value):
    meaning = classify(line, "MyPkg")
    assert (meaning.kind, meaning.value) == (kind, value)


def test_logical_lines_join_continuations_and_drop_comments():
    assert logical_lines("# head\nfoo \\\n  >=1\n\n  bar  # why\n") == ["foo    >=1", "bar"]


def test_includes_are_read_relative_to_the_including_file_and_cycles_stop(write_tree):
    root = write_tree({"requirements/test.txt": "-r base.txt\npytest\n", "requirements/base.txt": "attrs\n-r test.txt\n",
                       "requirements/escape.txt": "-r ../../outside.txt\n"})
    assert read_requirement_file(root, "requirements/test.txt") == (
        ["attrs", "pytest"], ["requirements/test.txt", "requirements/base.txt"])
    assert read_requirement_file(root, "requirements/escape.txt") == ([], ["requirements/escape.txt"])
    assert read_requirement_file(root, "missing.txt") == ([], [])

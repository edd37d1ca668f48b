"""The pure-Python unified diff writer and strict applier the verifier builds B, A′ and siblings with."""

from __future__ import annotations

import random
import shutil
import subprocess

import pytest

from repo2rlenv.verifiers.test_synthesis.verifier_patch import (
    PatchError, apply_diff, check_relpath, make_diff, parse_diff, split_lines, touched_paths)

BASE = "".join(f"line {i}\n" for i in range(1, 41))


@pytest.mark.parametrize(("old", "new"), [
    (BASE, BASE.replace("line 3\n", "line three\n")),
    (BASE, BASE.replace("line 1\n", "") + "tail\n"),  # first line removed, last appended
    (BASE, BASE.replace("line 5\n", "").replace("line 30\n", "x\ny\n")),  # two hunks
    (BASE, BASE.rstrip("\n")),  # newline at EOF dropped
    (BASE.rstrip("\n"), BASE.rstrip("\n") + " more"),  # both without newline at EOF
    ("a\r\nb\r\n", "a\r\nB\r\n"),  # CRLF stays part of the line
    ("x = 1\n\x0cy = 2\n", "x = 1\n\x0cy = 3\n"),  # a form feed is content, not a line break
    ("", "created\n"),
    ("only\n", ""),
])
def test_round_trip(old, new):
    diff = make_diff("pkg/mod.py", old, new)
    assert apply_diff(diff, {"pkg/mod.py": old}) == {"pkg/mod.py": new}


def test_random_edits_round_trip():
    rng = random.Random(7)
    for _ in range(200):
        lines = split_lines(BASE)
        for _ in range(rng.randint(1, 6)):
            i = rng.randrange(len(lines))
            op = rng.choice(["del", "ins", "chg"])
            if op == "del" and len(lines) > 1:
                del lines[i]
            elif op == "ins":
                lines.insert(i, f"new {rng.random()}\n")
            else:
                lines[i] = f"changed {rng.random()}\n"
        new = "".join(lines)  # may equal BASE (an insert undone by a delete): then the diff is empty
        assert apply_diff(make_diff("m.py", BASE, new), {"m.py": BASE}).get("m.py", BASE) == new


def test_creation_and_deletion_use_dev_null():
    created = make_diff("new.py", None, "x = 1\n")
    assert created.splitlines()[:2] == ["--- /dev/null", "+++ b/new.py"]
    assert apply_diff(created, {}) == {"new.py": "x = 1\n"}
    deleted = make_diff("old.py", "x = 1\n", None)
    assert apply_diff(deleted, {"old.py": "x = 1\n"}) == {"old.py": None}
    with pytest.raises(PatchError, match="already present"):
        apply_diff(created, {"new.py": "y\n"})


def test_context_must_match_exactly_at_the_stated_line():
    diff = make_diff("m.py", BASE, BASE.replace("line 20\n", "twenty\n"))
    with pytest.raises(PatchError, match=r"m.py: hunk #1 does not apply at line 17"):
        apply_diff(diff, {"m.py": BASE.replace("line 18\n", "line 18 \n")})
    shifted = "prefix\n" + BASE  # `patch` would apply this with an offset; we refuse
    with pytest.raises(PatchError, match="does not apply"):
        apply_diff(diff, {"m.py": shifted})
    with pytest.raises(PatchError, match="missing"):
        apply_diff(diff, {})


@pytest.mark.parametrize("path", ["/etc/passwd", "../x.py", "a/../../x.py", "a//b.py", "./a.py", ""])
def test_unsafe_paths_are_refused(path):
    with pytest.raises(PatchError, match="unsafe path"):
        check_relpath(path)
    diff = f"--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-a\n+b\n"
    with pytest.raises(PatchError):
        parse_diff(diff)


def test_reads_git_style_and_plain_headers():
    git_diff = ("diff --git a/src/m.py b/src/m.py\nindex 1111111..2222222 100644\n"
                "--- a/src/m.py\n+++ b/src/m.py\n@@ -1,2 +1,2 @@\n x\n-y\n+z\n")
    assert apply_diff(git_diff, {"src/m.py": "x\ny\n"}) == {"src/m.py": "x\nz\n"}
    plain = "--- a/m.py\t2024-01-01 00:00:00\n+++ m.py\t2024-01-02\n@@ -1 +1 @@\n-y\n+z\n"
    # Not git style (only one side has the prefix): the paths are taken literally.
    assert touched_paths(plain) == ["a/m.py", "m.py"]


@pytest.mark.parametrize("diff", [
    "--- a/m.py\n@@ -1 +1 @@\n-a\n+b\n",  # no +++
    "--- a/m.py\n+++ b/m.py\n@@ -1,2 +1 @@\n-a\n+b\n",  # counts disagree with the header
    "--- a/m.py\n+++ b/m.py\n@@ bad @@\n",
    "--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n?a\n",
    "@@ -1 +1 @@\n-a\n+b\n",  # hunk before any header
])
def test_malformed_diffs_raise(diff):
    with pytest.raises(PatchError):
        apply_diff(diff, {"m.py": "a\n"})


def test_output_is_accepted_by_gnu_patch(tmp_path):
    patch = shutil.which("patch")
    assert patch, "GNU patch is needed to cross-check the diff format"
    old, new = BASE.rstrip("\n"), BASE.replace("line 2\n", "two\n").replace("line 39\n", "")
    (tmp_path / "m.py").write_text(old)
    (tmp_path / "d.diff").write_text(make_diff("m.py", old, new))
    subprocess.run([patch, "-p1", "-s", "-i", "d.diff"], cwd=tmp_path, check=True)
    assert (tmp_path / "m.py").read_text() == new

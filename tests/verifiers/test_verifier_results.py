"""Run results: JUnit XML parsing, and reading files a test run wrote without trusting them."""

from __future__ import annotations

import os

from repo2rlenv.verifiers.test_synthesis.verifier_results import Outcome, parse_junit, read_run_file

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="6">
<testcase classname="tests.test_x" name="test_pass" time="0.01"/>
<testcase classname="tests.test_x" name="test_fail"><failure message="assert 1 == 2">...</failure></testcase>
<testcase classname="tests.test_x" name="test_err"><error message="fixture 'db' not found">...</error></testcase>
<testcase classname="tests.test_x" name="test_skip"><skipped message="no db" /></testcase>
<testcase classname="tests.test_x.TestBox" name="test_p[1-2]" />
<testcase classname="tests.test_x" name="test_teardown"><error message="failed on teardown">x</error></testcase>
</testsuite></testsuites>
"""


def test_outcomes_by_node_id(tmp_path):
    (tmp_path / "j.xml").write_text(JUNIT)
    cases, collection_failed = parse_junit(tmp_path / "j.xml")
    assert cases == {
        "tests.test_x::test_pass": Outcome.passed, "tests.test_x::test_fail": Outcome.failed,
        "tests.test_x::test_err": Outcome.error, "tests.test_x::test_skip": Outcome.skipped,
        "tests.test_x.TestBox::test_p[1-2]": Outcome.passed, "tests.test_x::test_teardown": Outcome.error}
    assert collection_failed is False


def test_repeated_node_ids_keep_the_worst_outcome(tmp_path):
    (tmp_path / "j.xml").write_text(
        '<testsuite><testcase classname="t" name="a"/><testcase classname="t" name="a">'
        '<failure message="x"/></testcase><testcase classname="t" name="a"/></testsuite>')
    assert parse_junit(tmp_path / "j.xml") == ({"t::a": Outcome.failed}, False)


def test_collection_errors_are_not_cases(tmp_path):
    (tmp_path / "j.xml").write_text(
        '<testsuite><testcase classname="" name="tests.test_x"><error message="collection failure">'
        'ImportError</error></testcase></testsuite>')
    assert parse_junit(tmp_path / "j.xml") == ({}, True)


def test_unusable_files_give_none(tmp_path):
    assert parse_junit(tmp_path / "missing.xml") is None
    (tmp_path / "bad.xml").write_text("<testsuite><testcase")
    assert parse_junit(tmp_path / "bad.xml") is None
    (tmp_path / "real.xml").write_text(JUNIT)
    (tmp_path / "link.xml").symlink_to(tmp_path / "real.xml")
    assert parse_junit(tmp_path / "link.xml") is None  # a planted symlink could point anywhere
    os.mkfifo(tmp_path / "fifo.xml")
    assert read_run_file(tmp_path / "fifo.xml", 100) is None  # would block a plain open()
    (tmp_path / "big").write_bytes(b"x" * 101)
    assert read_run_file(tmp_path / "big", 100) is None
    assert read_run_file(tmp_path / "real.xml", 10_000) == JUNIT.encode()

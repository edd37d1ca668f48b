"""Parse pytest's JUnit XML into per-test outcomes keyed by pytest node id."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from enum import Enum

from pydantic import BaseModel, ConfigDict, Field


class Outcome(str, Enum):
    passed = "passed"
    failed = "failed"
    error = "error"
    skipped = "skipped"


class TestResult(BaseModel):
    """One test case's result."""

    model_config = ConfigDict(extra="forbid")
    __test__ = False

    nodeid: str
    outcome: Outcome
    duration_sec: float = 0.0
    message: str = Field("", description="First line of the failure/error/skip message.")
    failure_text: str = Field("", exclude=True,
                              description="The end of the failure report, read for causes (never stored).")


def case_nodeid(case: ET.Element) -> str:
    """A <testcase>'s pytest node id: our plugin's `r2e_nodeid` property, else one built from
    classname/name (collection errors carry no property; keep something unique and readable)."""
    for prop in case.iter("property"):
        if prop.get("name") == "r2e_nodeid" and prop.get("value"):
            return prop.get("value")
    classname, name = case.get("classname", ""), case.get("name", "")
    return f"{classname.replace('.', '/')}::{name}" if classname else name


def parse_junit(xml_text: str) -> dict[str, TestResult]:
    """Outcomes by node id; a malformed file raises ValueError."""
    try:
        root = ET.fromstring(xml_text)
    except ET.ParseError as exc:
        raise ValueError(f"malformed JUnit XML: {exc}") from exc
    results: dict[str, TestResult] = {}
    for case in root.iter("testcase"):
        nodeid = case_nodeid(case)
        outcome, message = Outcome.passed, ""
        for tag, kind in (("failure", Outcome.failed), ("error", Outcome.error), ("skipped", Outcome.skipped)):
            node = case.find(tag)
            if node is not None:
                outcome = kind
                message = (node.get("message") or node.text or "").strip().splitlines()[:1]
                message = message[0][:300] if message else ""
                break
        # A teardown error is reported as a second <error> on a passed case: the test is not usable.
        prev = results.get(nodeid)
        if prev is not None and prev.outcome != Outcome.passed:
            continue
        results[nodeid] = TestResult(nodeid=nodeid, outcome=outcome, message=message,
                                     duration_sec=float(case.get("time") or 0.0))
    return results

"""Read the outcomes file our pytest plugin writes (`r2e_pytest_plugin`, `R2E_OUTCOMES`).

The plugin sees every report pytest makes (all phases, subtests), so its verdict per test is the one to
trust; JUnit XML (`junit.py`) is the fallback when a run died before writing any line.
"""

from __future__ import annotations

import json

from pydantic import BaseModel, ConfigDict, Field

from repo2rlenv.baseline.junit import Outcome, TestResult


class CollectionError(BaseModel):
    """A file (or other collector) pytest could not collect."""

    model_config = ConfigDict(extra="forbid")

    nodeid: str
    message: str = ""
    failure_text: str = Field("", exclude=True)


def parse_outcomes(text: str) -> tuple[dict[str, TestResult], list[CollectionError]]:
    """Per-test results and collection errors from the plugin's lines (a line cut short is skipped)."""
    results: dict[str, TestResult] = {}
    errors: list[CollectionError] = []
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict):
            continue
        if "case" in record:
            try:
                outcome = Outcome(record.get("outcome"))
            except ValueError:
                continue
            results[str(record["case"])] = TestResult(
                nodeid=str(record["case"]), outcome=outcome, duration_sec=float(record.get("duration") or 0.0),
                message=str(record.get("message") or ""), failure_text=str(record.get("text") or ""))
        elif "collect_error" in record:
            errors.append(CollectionError(nodeid=str(record["collect_error"]), message=str(record.get("message") or ""),
                                          failure_text=str(record.get("text") or "")))
    return results, errors

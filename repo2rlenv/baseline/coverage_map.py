"""Per-test coverage: which test (node id) executed which line of which file.

Built from `coverage json --show-contexts` output, where each context is a pytest node id (set by our
plugin). Stored compactly: one list of test ids, and per file a map line → indices into that list.
"""

from __future__ import annotations

import json
from typing import Iterable

from pydantic import BaseModel, ConfigDict, Field


class FileCoverage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    executable: list[int] = Field(description="Lines coverage.py considers executable.")
    executed: list[int] = Field(description="Lines executed by at least one test.")
    contexts: dict[int, list[int]] = Field(default_factory=dict, description="Line → indices of tests.")


class CoverageMap(BaseModel):
    """Which tests cover which lines; paths are POSIX, relative to the repo root."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = 1
    tests: list[str] = Field(default_factory=list, description="Test node ids, indexed by `contexts`.")
    files: dict[str, FileCoverage] = Field(default_factory=dict)

    def tests_covering(self, path: str, lines: Iterable[int]) -> set[str]:
        """Node ids of tests that executed any of `lines` of `path`."""
        fc = self.files.get(path)
        if fc is None:
            return set()
        found: set[str] = set()
        for line in lines:
            for idx in fc.contexts.get(line, ()):
                found.add(self.tests[idx])
        return found

    def covered_lines(self, path: str, lines: Iterable[int] | None = None,
                      by: set[str] | None = None) -> set[int]:
        """Lines of `path` executed (optionally only by tests in `by`), restricted to `lines`."""
        fc = self.files.get(path)
        if fc is None:
            return set()
        wanted = set(lines) if lines is not None else None
        out = set()
        for line, idxs in fc.contexts.items():
            if wanted is not None and line not in wanted:
                continue
            if by is None or any(self.tests[i] in by for i in idxs):
                out.add(line)
        if by is None:
            out |= {ln for ln in fc.executed if wanted is None or ln in wanted}
        return out

    def executable_lines(self, path: str, lines: Iterable[int] | None = None) -> set[int]:
        fc = self.files.get(path)
        if fc is None:
            return set()
        wanted = set(lines) if lines is not None else None
        return {ln for ln in fc.executable if wanted is None or ln in wanted}


def parse_coverage_json(text: str) -> CoverageMap:
    """Read coverage.py's JSON report (with contexts) into a CoverageMap."""
    data = json.loads(text)
    tests: list[str] = []
    index: dict[str, int] = {}
    files: dict[str, FileCoverage] = {}
    for path, info in (data.get("files") or {}).items():
        executed = sorted(info.get("executed_lines", []))
        missing = info.get("missing_lines", [])
        contexts: dict[int, list[int]] = {}
        for line, names in (info.get("contexts") or {}).items():
            ids = []
            for name in names:
                if not name:  # the empty context: import time, outside any test
                    continue
                if name not in index:
                    index[name] = len(tests)
                    tests.append(name)
                ids.append(index[name])
            if ids:
                contexts[int(line)] = sorted(set(ids))
        files[path.replace("\\", "/")] = FileCoverage(
            executable=sorted(set(executed) | set(missing)), executed=executed, contexts=contexts)
    return CoverageMap(tests=tests, files=files)

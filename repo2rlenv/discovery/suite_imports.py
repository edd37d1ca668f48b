"""Which declared test dependencies the suite actually imports, read statically (issue 34, item 2).

A dev or test requirement list mixes what the tests import with what a maintainer also runs (benchmarks,
profilers, notebooks). The package's own (its runtime requirements file), the ones the test files and
conftests import, and pytest and its plugins are installed with the project, where a failure fails the
environment; every other one is installed on its own and dropped with pip's reason when it fails, so one benchmark-only
package with a C extension no longer stops the image from building. The baseline then shows whether what
is left is enough.
"""

from __future__ import annotations

import ast
from pathlib import Path

from repo2rlenv.discovery.plugins import imported_tops, parse_test_file, test_files
from repo2rlenv.discovery.project import normalize_name
from repo2rlenv.discovery.requirements import Dep, requirement_name
from repo2rlenv.discovery.testdeps import RUNTIME_FILES

def imported_names(root: Path) -> set[str]:
    """Top-level module names the test files and conftests import (absolute imports only)."""
    names: set[str] = set()
    for path in test_files(root):
        tree = parse_test_file(path)
        if tree is not None:
            names.update(top for node in ast.walk(tree) for top in imported_tops(node))
    return names


def _import_forms(dist: str) -> set[str]:
    """The names a distribution is usually imported under: its normalised name with `-` as `_`, and that
    without a `python-`/`py` prefix (`python-dateutil` → dateutil). A mapping it misses only moves the
    dependency to the separate, tolerant installs — pip still installs it when it can."""
    base = normalize_name(dist).replace("-", "_")
    return {base, base.removeprefix("python_"), base.removeprefix("py")}


def _runs_without_import(dist: str) -> bool:
    """pytest and its plugins reach a run through entry points (a `mocker` fixture, a `--timeout` flag),
    never through a test file's import, so they count as used."""
    return normalize_name(dist).startswith("pytest")


def _runtime(dep: Dep) -> bool:
    """A line of the project's runtime requirements file (or a file it includes): the package's own
    dependency, which its code imports whether or not a test file names it."""
    return dep.source.split(" → ", 1)[0] in RUNTIME_FILES


def split_by_use(requirements: list[Dep], imported: set[str]) -> tuple[list[Dep], list[Dep]]:
    """(the requirements the suite uses, the others), each in declared order."""
    lowered = {name.lower() for name in imported}
    used, other = [], []
    for dep in requirements:
        name = requirement_name(dep.spec)
        (used if _runtime(dep) or _runs_without_import(name) or _import_forms(name) & lowered else other).append(dep)
    return used, other

"""What the solver reads from the workspace before its first call: the module, the function, a test.

Everything comes from the sandbox session (the agent's container), never from the task directory, so
task mode sees exactly what a Harbor agent sees. Sections are bounded (the oracle's `sections` helpers).
"""

from __future__ import annotations

import posixpath

from pydantic import BaseModel, ConfigDict, Field

from repo2rlenv.pysource.functions import FunctionRecord
from repo2rlenv.pysource.sections import (
    imports_reaching,
    module_imports,
    nearby_code,
    truncate,
)
from repo2rlenv.sandbox.base import Session
from repo2rlenv.solver.errors import SolverInputError
from repo2rlenv.solver.target import Target, locate_function
from repo2rlenv.solver.text import numbered

MAX_EXAMPLE_CHARS = 5000
MAX_CANDIDATE_TESTS = 8


class RepoContext(BaseModel):
    """The excerpts the prompts show."""

    model_config = ConfigDict(extra="forbid")

    module_source: str = Field(description="The target module's text.")
    function: FunctionRecord
    function_source: str = Field(description="The function with line numbers.")
    imports: str = Field(description="The module's top-level imports.")
    nearby: str = Field(description="Constants, sibling signatures or the enclosing class.")
    example_test_path: str | None = None
    example_test: str | None = Field(None, description="An existing test that uses the module, truncated.")
    import_lines: list[str] = Field(description="How tests import the module.")


def read_text(session: Session, rel: str) -> str | None:
    data = session.read_file(posixpath.join(session.workspace, rel))
    return None if data is None else data.decode("utf-8", "replace")


def _example_test(session: Session, target: Target) -> tuple[str | None, str | None]:
    """The existing test file that mentions the function most (ties: the module), if any."""
    found = session.exec(["grep", "-rlF", "--include=test_*.py", "--include=*_test.py", target.module,
                          session.workspace], timeout=60)
    paths = [posixpath.relpath(p, session.workspace) for p in found.stdout.split() if p.strip()]
    paths = [p for p in paths if p != target.test_path][:MAX_CANDIDATE_TESTS]
    best: tuple[int, str, str] | None = None
    for rel in sorted(paths):
        text = read_text(session, rel) or ""
        score = text.count(target.name)
        if best is None or score > best[0]:
            best = (score, rel, text)
    return (best[1], best[2]) if best else (None, None)


def gather_context(session: Session, target: Target) -> RepoContext:
    source = read_text(session, target.path)
    if source is None:
        raise SolverInputError(f"{target.path} is not in the workspace")
    function = locate_function(source, target)
    example_path, example = _example_test(session, target)
    fallback = f"from {target.module} import {target.qualname.split('.')[0]}"
    start = function.lineno - len(function.decorators)  # one line per decorator, the common case
    return RepoContext(
        module_source=source, function=function,
        function_source=numbered(source, start, function.end_lineno),
        imports=module_imports(source).strip(), nearby=nearby_code(source, target.qualname).strip(),
        example_test_path=example_path,
        example_test=truncate(example, MAX_EXAMPLE_CHARS) if example else None,
        import_lines=imports_reaching(example, target.module) or [fallback])

"""What the LLM oracle knows about one candidate: A's function and module, the A→B diff, an existing test.

The oracle's generator is on the dataset builder's side, so unlike the agent it sees B (as the diff).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from repo2rlenv.pipelines.test_synthesis.candidates import Candidate
from repo2rlenv.pipelines.test_synthesis.options import TestSynthesisOptions


class OracleContext(BaseModel):
    """Inputs of one LLM oracle synthesis (and of the differential one, in `synthesize_hybrid`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    target_file: str = Field(description="Path of the module relative to the repo root.")
    module: str = Field(description="Importable dotted module name.")
    qualname: str = Field(description="The function's dotted name inside the module.")
    function_source: str = Field(description="The function's text on A.")
    module_source: str = Field(description="The whole module's text on A (imports and nearby code come from it).")
    diff: str = Field(description="Unified diff A → B.")
    test_path: str = Field(description="Where the oracle file lives, relative to the repo root.")
    example_test_path: str | None = Field(None, description="An existing test file of the function, for style.")
    example_test: str | None = Field(None, description="Its text.")
    max_test_loc: int = Field(200, ge=1, description="Most non-blank lines the file may have (the verifier's limit).")
    min_new_tests: int = Field(1, ge=1, description="Fewest test cases (the verifier's limit).")
    max_tests: int = Field(5, ge=1, description="How many test functions to ask for, at most.")


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def context_for_candidate(cand: Candidate, a_dir: Path, test_path: str, options: TestSynthesisOptions) -> OracleContext:
    """The context of a gated candidate, read from A's snapshot; the example is the file with most covering tests."""
    func = cand.function
    module_source = _read(a_dir / func.path) or ""
    lines = module_source.splitlines(keepends=True)
    files = Counter(n.split("::")[0] for n in cand.covering_tests)
    example_path = next((f for f, _ in files.most_common() if (a_dir / f).is_file()), None)
    return OracleContext(
        target_file=func.path,
        module=func.module,
        qualname=func.qualname,
        function_source="".join(lines[func.lineno - 1: func.end_lineno]),
        module_source=module_source,
        diff=cand.diff,
        test_path=test_path,
        example_test_path=example_path,
        example_test=_read(a_dir / example_path) if example_path else None,
        max_test_loc=options.max_test_loc,
        min_new_tests=options.min_new_tests,
        max_tests=options.max_oracle_tests,
    )

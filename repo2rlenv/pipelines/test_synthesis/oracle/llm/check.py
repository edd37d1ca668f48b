"""Judge a candidate test file the way the task's verifier will: static checks first, then A and B runs.

Cheapest first: it must compile, stay within `max_test_loc` non-blank lines and pass the verifier's own
lint (`verifiers/test_synthesis/verifier_lint.py`, the same rules the in-task grading applies); then it
runs on A and on B through the differential oracle's `Runner` (its probe's ``check`` mode, wrapped by
``probe_tails.py`` to bring back failure texts). It is accepted when it has at least `min_new_tests`
cases, every case passes on A and every case fails on B — what a 1.0 needs, short of A′ and coverage,
which the pipeline checks afterwards.
"""

from __future__ import annotations

import json
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from repo2rlenv.errors import SandboxError
from repo2rlenv.pipelines.test_synthesis.oracle.differential.differential import ProbeFailed, Runner, Variant, probe_sources
from repo2rlenv.pipelines.test_synthesis.oracle.differential.records import CheckReport, read_report
from repo2rlenv.verifiers.test_synthesis.verifier_lint import lint_source

PASSED = "passed"
FAILED = "failed"


class Verdict(StrEnum):
    """What became of one attempt. Values read as the end of "the file was not accepted: ..."."""

    ACCEPTED = "accepted"
    NO_CODE = "no code block in the reply"
    SYNTAX = "the file does not compile"
    TOO_LONG = "the file is longer than the line budget"
    LINT = "the file uses constructs the grader refuses"
    FAILS_ON_A = "some tests do not pass on version A"
    PASSES_ON_B = "some tests pass on version B, so they do not detect the change"
    TOO_FEW = "too few test cases"
    RUN_FAILED = "the test run did not finish"


class TailedCheckReport(CheckReport):
    """The probe's check report plus failure texts."""

    tails: dict[str, str] = Field(default_factory=dict, description="Test name -> end of its failure text.")


class Judgement(BaseModel):
    """The verdict on one file, with what the feedback to the model is made of."""

    model_config = ConfigDict(extra="forbid")

    verdict: Verdict
    detail: str | None = Field(None, description="Static-check findings or the run failure, as text.")
    on_a: dict[str, str] = Field(default_factory=dict, description="Test name -> outcome on A.")
    on_b: dict[str, str] = Field(default_factory=dict, description="Test name -> outcome on B.")
    failing_on_a: list[str] = Field(default_factory=list)
    passing_on_b: list[str] = Field(default_factory=list, description="Cases that do not fail on B.")
    tails_a: dict[str, str] = Field(default_factory=dict, description="Failure texts of the cases failing on A.")
    collection_errors: list[str] = Field(default_factory=list, description="Collection errors on A.")

    @property
    def cases(self) -> list[str]:
        return sorted(set(self.on_a) | set(self.on_b))


def run_check(runner: Runner, variant: Variant, test_path: str, source: str) -> TailedCheckReport:
    """Place ``source`` at ``test_path`` in a fresh copy of ``variant`` and report each test's outcome."""
    files = {
        **probe_sources(),  # probe_tails.py is one of the probe's files
        "spec.json": json.dumps({"test_path": test_path, "source": source}),
    }
    argv = ["{scratch}/probe_tails.py", "check", "--spec", "{scratch}/spec.json", "--out", "{scratch}/out.json"]
    text = runner(variant, argv, files)
    try:
        report = read_report(TailedCheckReport, text)
    except ValidationError as exc:
        raise ProbeFailed(f"check on {variant}: unreadable report: {exc.errors()[:1]}") from exc
    if report.error:
        raise ProbeFailed(f"check on {variant}: {report.error}")
    return report


def static_check(source: str, test_path: str, max_test_loc: int) -> Judgement | None:
    """A rejection the file earns without running it, or None."""
    try:
        compile(source, test_path, "exec")
    except (SyntaxError, ValueError) as exc:
        line = getattr(exc, "lineno", None)
        message = getattr(exc, "msg", exc)
        return Judgement(verdict=Verdict.SYNTAX, detail=f"{type(exc).__name__} at line {line}: {message}")
    loc = sum(1 for line in source.splitlines() if line.strip())
    if loc > max_test_loc:
        return Judgement(verdict=Verdict.TOO_LONG, detail=f"{loc} non-blank lines; the limit is {max_test_loc}")
    findings = lint_source(source, test_path)
    if findings:
        return Judgement(verdict=Verdict.LINT, detail="\n".join(f"line {f.line}: {f.message}" for f in findings[:10]))
    return None


def judge_file(runner: Runner, source: str, test_path: str, *, max_test_loc: int, min_cases: int) -> Judgement:
    """The verdict on ``source``: static checks, then a run on A and (when A collected cases) on B."""
    rejected = static_check(source, test_path, max_test_loc)
    if rejected is not None:
        return rejected
    try:
        on_a = run_check(runner, "A", test_path, source)
        on_b = run_check(runner, "B", test_path, source) if on_a.results else None
    except (ProbeFailed, SandboxError) as exc:  # a test that hangs ends here, through the runner's timeout
        return Judgement(verdict=Verdict.RUN_FAILED, detail=str(exc)[-1000:])
    b_results = on_b.results if on_b is not None else {}
    cases = sorted(set(on_a.results) | set(b_results))
    failing_a = [c for c in cases if on_a.results.get(c) != PASSED]
    # A case missing on B (B failed to collect it) fails there, as in the verifier.
    passing_b = [c for c in cases if c in b_results and b_results[c] != FAILED]
    if failing_a or (not cases and on_a.collection_errors):
        verdict = Verdict.FAILS_ON_A
    elif passing_b:
        verdict = Verdict.PASSES_ON_B
    elif len(cases) < min_cases:
        verdict = Verdict.TOO_FEW
    else:
        verdict = Verdict.ACCEPTED
    return Judgement(
        verdict=verdict, on_a=on_a.results, on_b=b_results, failing_on_a=failing_a, passing_on_b=passing_b,
        tails_a={c: on_a.tails[c] for c in failing_a if c in on_a.tails}, collection_errors=on_a.collection_errors,
        detail=f"{len(cases)} test case(s); at least {min_cases} needed" if verdict is Verdict.TOO_FEW else None,
    )

"""Pydantic models of the verifier's files: `verifier_config.json` (written by the emitter) and
`reward-details.json` (written by the verifier, read back by validation and training tools).

The in-task verifier cannot import pydantic (it is stdlib + pytest + coverage), so it reads the config
with its own strict dataclass reader; a test keeps the two field lists identical. Host side only: this
module is not copied into tasks.
"""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

# verifier_config.json format. 1: first version. 2: twins drawn at grading time (twin_runs, twin_kinds,
# case_timeout_sec), no A′ diff. 3: pytest_plugins (graded runs load the image's plugins with -p). The
# 4: the graded reward's mutation_weight and oracle_lines. 5: pristine_archive (A's files shipped in tests/, so
# grading in the agent's own container never depends on what the agent left of A). 6: native_exposed (the
# memory-primitive modules, e.g. _ctypes, the target needs at import: only they are mapped in the runs).
# The in-task reader (`verifier_config`) still reads 1-5.
CONFIG_SCHEMA_VERSION = 6
# reward-details.json format. 1: first version. 2: `runner` (zygote or subprocess) and each variant's `via`.
# 3: runs instead of variants (A, A′k, B′k, Sj′1), each with its guard state and refusals; n_tests, kills, twins.
# 4: mutation_score; coverage.kind, oracle_lines and covered_oracle_lines (the graded reward).
# 5: restored_workspace_files (A's files the agent changed, graded from the pristine archive instead) and
# strays_killed (processes the agent left behind, stopped before grading).
# 6: native (the extension modules the runs could map, and those refused); fault.
DETAILS_SCHEMA_VERSION = 6
# Where the emitter puts A's files for the verifier (tests/ is copied in after the agent has finished).
PRISTINE_ARCHIVE = "workspace.tar.xz"
TWIN_KINDS = ("padding", "neutral", "return_temp", "invert_if", "rename", "jitter", "references", "wrap", "opaque")


class RewardMode(str, Enum):
    """How coverage enters the reward (DESIGN §3)."""

    gated = "gated"  # b_pass·[B killed]·((1−μ) + μ·ms)·((1−w) + w·cov): graded, coverage on top of discrimination
    rfc = "rfc"  # (1−w)·b_pass·b_fail + w·cov: the RFC's form, pays coverage alone


class VariantDiffs(BaseModel):
    """Diff files, relative to the task's tests/ dir, that turn A into the graded variants."""

    model_config = ConfigDict(extra="forbid")

    broken: str = Field("broken_patch.diff", description="A → B, the hidden behaviour change")
    siblings: list[str] = Field(default_factory=list, description="A → B_k, more validated mutants of the function")


class VerifierConfig(BaseModel):
    """verifier_config.json: everything the in-task verifier needs besides the files it names."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = Field(CONFIG_SCHEMA_VERSION, description="format version of this file")
    submission: str = Field(description="relative path of the agent's test file, e.g. tests/test_r2e_1a2b3c4d.py")
    target_file: str = Field(description="relative path of the module holding the function")
    target_qualname: str = Field(description="qualified name of the function, e.g. 'Stock.reserve'")
    function_lines: list[int] = Field(description="executable lines of the function in A's target_file")
    coverage_targets: list[int] = Field(
        description="lines the cov term measures: baseline-uncovered lines a known-good test reaches; empty → cov = 1")
    baseline_full_coverage: bool = Field(description="the existing suite already covers the whole function")
    import_roots: list[str] = Field(description="dirs put on sys.path for the copies, e.g. ['src'] or ['']")
    reward_mode: RewardMode = Field(RewardMode.gated, description="gated (default) or rfc")
    coverage_weight: float = Field(0.5, ge=0.0, le=1.0, description="w in the reward formulas")
    min_new_tests: int = Field(1, ge=0, description="fewer test cases than this → reward 0")
    max_test_loc: int = Field(400, ge=1, description="more non-blank lines in the submission → reward 0")
    run_timeout_sec: float = Field(120.0, gt=0, description="wall clock per pytest run")
    memory_mb: int = Field(2048, ge=64, description="address-space limit per pytest run")
    variants: VariantDiffs = Field(default_factory=VariantDiffs, description="the diffs that build B and the siblings")
    manifest: str = Field("workspace_manifest.json", description="{'files': {relpath: sha256}} of A's tree")
    twin_runs: int = Field(4, ge=1, le=16, description="runs of rewrites of A (A′), and as many of B (B′), per grading")
    twin_kinds: list[str] = Field(default_factory=lambda: list(TWIN_KINDS),
                                  description="the rewrite kinds the twins use (those checked for this task)")
    case_timeout_sec: float = Field(60.0, gt=0, description="wall clock of one test case's call")
    pytest_plugins: list[str] = Field(
        default_factory=list, description="pytest plugins (entry-point names) installed in the task image, loaded "
                                          "with -p in graded runs, where plugin autoloading is off")
    mutation_weight: float = Field(0.5, ge=0.0, le=1.0,
                                   description="μ: the share of the discrimination term decided by the siblings killed")
    oracle_lines: list[int] = Field(
        default_factory=list, description="the function's lines the reference tests run on A; the gated cov is the "
                                          "share of them the submission runs (empty → the coverage targets' share)")
    pristine_archive: str | None = Field(
        PRISTINE_ARCHIVE, description="A's files as a tar.xz in tests/ (relative to it): the runs are built from it, "
                                      "not from the workspace; None → from the workspace, checked against the "
                                      "manifest (a changed file of A scores 0)")
    native_exposed: list[str] = Field(
        default_factory=list, description="raw-memory modules the target imports: memory primitives (verifier_native."
                                          "MEMORY_PRIMITIVES, e.g. _ctypes), which the runs then load (others never "
                                          "do), and raw-address libraries (numpy); the reward details say the "
                                          "grading is exposed")

    def write(self, path: Path) -> None:
        path.write_text(json.dumps(self.model_dump(mode="json"), indent=2) + "\n", encoding="utf-8")


class WorkspaceManifest(BaseModel):
    """workspace_manifest.json: A's files as built into the image, with their sha256."""

    model_config = ConfigDict(extra="forbid")

    files: dict[str, str] = Field(description="relpath → sha256 hex digest")


class LintFindingModel(BaseModel):
    model_config = ConfigDict(extra="forbid")

    line: int
    col: int
    rule: str = Field(description="rule id from verifier_lint.RULES")
    message: str


class CaseResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="pytest node id as collected on A")
    outcomes: dict[str, str] = Field(description="run name → passed/failed/error/skipped/missing/not_run")


class RunVia(str, Enum):
    """How the verifier started a run's process (verifier_launch.Via)."""

    zygote = "zygote"  # a child forked by the warm zygote
    subprocess = "subprocess"  # a fresh interpreter: the fallback


class RunRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="A, A′k (rewrites of A), B′k (of B) or Sj′1 (of sibling j)")
    variant: str = Field(description="A, B or Sj: what the run's copy behaves as")
    status: str = Field(description="ok, timeout, crashed or not_run")
    seconds: float
    returncode: int | None
    n_cases: int
    collect_errors: list[str]
    leftover_processes: int = Field(description="processes of the run still present after it was ended")
    via: RunVia | None = Field(None, description="how the run's process was started; None when not run")
    guard: dict = Field(description="the kernel barrier the run applied: landlock ABI, seccomp, notes")
    refusals: list[str] = Field(description="what the run's guard refused (first few; written by the run)")
    output_tail: str


class CoverageResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    targets: list[int]
    covered_targets: list[int]
    covered_function_lines: list[int]
    oracle_lines: list[int] = Field(default_factory=list, description="what the gated cov is relative to")
    covered_oracle_lines: list[int] = Field(default_factory=list)
    kind: str = Field("none", description="what cov measured: oracle (relative to the reference tests' lines), "
                                          "targets (baseline-uncovered lines) or none (nothing to measure: 1)")
    measured: bool = Field(description="whether the A run produced coverage data (it is traced only when "
                                      "the task measures coverage)")


class Runner(BaseModel):
    model_config = ConfigDict(extra="forbid")

    via: RunVia = Field(description="how the runs were being started when grading ended")
    note: str = Field(description="why runs went through subprocesses, when they did")


class Isolation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    uid: int = Field(description="uid the test runs used")
    dropped_privileges: bool
    note: str = Field(description="why privileges were not dropped, when they were not")


class RewardDetails(BaseModel):
    """reward-details.json: the reward and everything it was computed from."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = Field(DETAILS_SCHEMA_VERSION)
    reward: float = Field(ge=0.0, le=1.0)
    reason: str | None = Field(description="why the reward is 0 (set then)")
    fault: Literal["submission", "verifier"] | None = Field(
        None, description="whose the 0 is when grading stopped early: `submission` (it was refused, or A's "
                          "files were changed) or `verifier` (an internal error: no verdict on the submission)")
    reward_mode: RewardMode | None
    coverage_weight: float | None
    mutation_weight: float | None = None
    b_pass: float | None
    b_fail: float | None = Field(description="None when no case passes on A and A′ or no B run was needed")
    cov: float | None
    mutation_score: float | None = Field(None, description="siblings killed / siblings; None when the task has "
                                                            "none (the reward then uses 1)")
    n_cases: int
    n_tests: int = Field(description="test functions (parametrized cases counted once)")
    kills: dict[str, list[str]] = Field(description="B-side variant → the good cases that fail on all its runs")
    cases: list[CaseResult]
    lint: list[LintFindingModel]
    variants: list[RunRecord]
    timings: dict[str, float | dict[str, float]]
    submission: str | None = None
    target: str | None = None
    submission_loc: int | None = None
    precompiled_modules: int | None = Field(None, description="modules given bytecode once for every run")
    ignored_workspace_files: list[str] | None = None
    ignored_workspace_file_count: int | None = None
    restored_workspace_files: list[str] | None = Field(
        None, description="A's files the agent changed or removed; graded from the pristine archive as they were")
    strays_killed: int | None = Field(None, description="processes the agent left running that test.sh's verifier "
                                                        "killed before grading (None: not looked for)")
    isolation: Isolation | None = None
    runner: Runner | None = None
    coverage: CoverageResult | None = None
    twins: dict | None = Field(None, description="files twinned, kinds, runs per side")
    native: dict | None = Field(None, description="extension modules the runs could map (verifier_native): "
                                                  "`interpreter` (counts, refused/unknown files with why, "
                                                  "failed mappings) and `copy` (the project's own refused ones)")

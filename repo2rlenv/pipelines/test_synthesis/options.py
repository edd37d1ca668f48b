"""Options of the test_synthesis pipeline (`--pipeline-opt key=value`, or `[pipeline_opts]` in a config file).

Every default carries a comment saying why it is what it is. Unknown keys are an error, never ignored:
a typo in an option must not silently produce a different dataset.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Strategy = Literal["commit_pair", "mutation", "hybrid"]
OracleKind = Literal["auto", "differential", "llm", "hybrid"]
RewardMode = Literal["gated", "rfc"]
HarborVerifierMode = Literal["separate", "shared"]


class TestSynthesisOptions(BaseModel):
    """Knobs of `repo2rlenv generate --pipeline test_synthesis`."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)
    # pytest would otherwise try to collect this class because of its name.
    __test__ = False

    # --- what to mine ---------------------------------------------------------------------------
    limit: int = Field(50, ge=1, description="Most tasks to emit (bounds emitted tasks, not candidates tried).")
    # Issue 34, item 1: a slow suite must not turn a run into an open-ended wait. The budget counts from
    # the run's start (environment and baseline included). Past it no new candidate (or commit) starts, and
    # a candidate whose next stage the time left cannot afford is deferred (budget.py); a rerun goes on where
    # this one stopped (the journal). The default leaves two minutes of a 20-minute slot to clone and write.
    time_budget_min: float = Field(
        18, ge=0, description="Minutes a run may spend (environment and baseline included; 0: no budget); "
                              "what is left is deferred (the first candidate the time left cannot afford "
                              "ends the run) and a rerun continues.")
    # One candidate's synthesis (oracle, the whole suite on A and B, siblings, twins, validation) normally
    # takes well under a minute; one that has used this much is dropped (a rerun would spend it again).
    candidate_budget_sec: float = Field(
        600, ge=0, description="Seconds one candidate's synthesis may take before it is dropped (0: no share).")
    # Real history first, then mutants to fill `limit` (issue 33: `commit_pair` alone, the default before,
    # made 0 of 5 tasks on click and requests). A plain directory has no history: mutants fill it all.
    strategy: Strategy = Field(
        "hybrid", description="Where broken/fixed pairs come from: `hybrid` (history, then mutants), "
                              "`commit_pair` (history only) or `mutation`.")
    seed: int = Field(0, description="Seed for every sampling decision; the same seed gives the same dataset.")
    operators: list[str] | None = Field(
        None, description="Mutation operators to use (names from the operator table); default: all."
    )
    # Two per function keeps a dataset varied without letting one long function dominate it.
    max_per_function: int = Field(2, ge=1, description="Most candidates kept per function.")
    # Functions shorter than this rarely make a task worth a test; longer ones make instructions vague.
    min_loc: int = Field(2, ge=1, description="Smallest function body (lines of code) to mine.")
    max_loc: int = Field(80, ge=1, description="Largest function body (lines of code) to mine.")
    # A mutant the existing suite already kills is not a test gap; keep them only when asked to.
    require_surviving: bool = Field(True, description="Keep only changes the existing covering tests miss.")

    # commit_pair mining
    max_commits: int = Field(500, ge=1, description="Most commits walked back from the ref.")
    max_files: int = Field(3, ge=1, description="Most source files a mined commit may touch.")
    max_lines: int = Field(60, ge=1, description="Most changed lines a mined commit may have.")
    since: str | None = Field(None, description="Only commits after this date (git's date formats).")
    until: str | None = Field(None, description="Only commits before this date.")
    # First-parent walks the mainline, where a merged pull request is one merge commit: it is read as its
    # change against its first parent (issue 33: on click 407 of 500 entries were merges, all skipped
    # before). `false` walks the side-branch commits one by one instead, and skips the merges.
    first_parent: bool = Field(True, description="Walk the mainline, merges read against their first parent; false: every commit, merges skipped.")
    # Issue 4's semantics: A is the commit's own tree and B its source diff reversed, each commit gated in
    # an environment built for its own dependency files (older commits can need older dependencies).
    # `ref` transplants the parent's function into the ref's file instead: one environment for every
    # pair and much faster, but it only mines functions unchanged since the commit.
    pair_base: Literal["commit", "ref"] = Field(
        "commit", description="`commit`: A = the commit's tree; `ref`: A = the ref's tree, B = its file with the parent's function.")
    # Issue 33, item 4: a commit's gates are decided by the tests that run its change; the whole suite at
    # the commit runs once, when one of its pairs has an oracle (gate/scope.py).
    gate_scope: Literal["covering", "suite"] = Field(
        "covering", description="Tests run at a commit before its gates: `covering` (test files that cover or name the change; the whole suite only before emission) or `suite`.")

    # --- the reward -----------------------------------------------------------------------------
    coverage_weight: float = Field(0.5, ge=0.0, le=1.0, description="w in the reward (DESIGN §3).")
    # The gated form pays coverage only on top of discrimination; the RFC form can be farmed (DESIGN §3).
    reward_mode: RewardMode = Field("gated", description="`gated` (card default) or `rfc` reward form.")
    min_new_tests: int = Field(1, ge=1, description="A submission with fewer test cases scores 0.")
    max_test_loc: int = Field(200, ge=1, description="A submission longer than this (non-blank lines) scores 0.")
    # Hidden sibling mutants make the reward graded (issue 16): a file that catches B and not its siblings
    # earns (1 − μ) of the discrimination term. Fewer are shipped when fewer survive and the oracle catches.
    siblings: int = Field(4, ge=0, le=8, description="Extra validated mutants of the same function to grade against.")
    sibling_oracles: bool = Field(
        True, description="When the oracle misses a sibling, search tests for that sibling too (model-free) and add them (gated only).")
    mutation_weight: float = Field(
        0.5, ge=0.0, le=1.0, description="μ in the gated reward: the share of the discrimination term the siblings killed decide.")

    # --- the oracle -----------------------------------------------------------------------------
    # `auto` = differential without a model, hybrid with one (issue 5).
    oracle: OracleKind = Field("auto", description="How the reference tests are synthesized.")
    max_attempts: int = Field(3, ge=1, description="LLM oracle attempts per candidate, each with verifier feedback.")
    max_oracle_tests: int = Field(5, ge=1, description="Most test functions in a differential oracle.")
    # Issue 34: a differential oracle's quality is the number of distinct behaviours it asserts (the
    # differing values on A and B); near-duplicate cases count once. Recorded on every candidate.
    min_oracle_behaviours: int = Field(
        1, ge=1, le=10, description="Emit only tasks whose differential oracle asserts at least this many distinct behaviours.")

    # The differential oracle's harvest runs the covering tests under a tracer; on a slow suite hundreds of
    # them cover one function (test_share.py). 0: all of them, however long they take.
    harvest_budget_sec: float = Field(
        15.0, ge=0, description="Baseline seconds of covering tests the differential oracle's harvest may run "
                                "(the fastest first; 0: all).")

    # The sibling search tries each other survivor of the function against the oracle and searches tests
    # for those it misses; on lark one candidate's search took 171 s (the usual is 5-20 s).
    siblings_budget_sec: float = Field(
        90.0, ge=0, description="Seconds one candidate's sibling search may take; past it the task ships with "
                                "the siblings found (0: no limit).")
    # The twin check runs the covering tests on two twins of A (emit/twins.py); twins keep behaviour by
    # construction, and the check looks for code that reads its own source, which fast unit tests show as
    # well as slow ones. On requests the full set cost two minutes a candidate.
    twin_check_budget_sec: float = Field(
        20.0, ge=0, description="Baseline seconds of covering tests the twin check runs on each twin of A "
                                "(the fastest first; 0: all).")
    # One differential search (harvest and replays) on a library whose calls are slow took minutes and
    # mostly found nothing (lark: 83-181 s against the usual 5-20 s); past its share it stops with what it has.
    oracle_search_sec: float = Field(
        90.0, ge=0, description="Seconds one model-free oracle search may take, harvest included (0: no limit).")

    # --- sandbox limits -------------------------------------------------------------------------
    baseline_reruns: int = Field(1, ge=0, le=5, description="Extra runs of the suite on A to find flaky tests.")
    suite_timeout_sec: float = Field(900, gt=0, description="Wall clock for one whole-suite run.")
    baseline_cache: bool = Field(
        True, description="Reuse a baseline computed before from the same tree, environment and pytest setup.")
    # Covering tests of one function normally run in well under a second; a mutant that loops hits this.
    mutant_timeout_sec: float = Field(60, gt=0, description="Wall clock for the covering tests on one mutant.")
    # mutmut's rule: tests that take many times longer on B than on A are looping, so a mutant's limit is
    # scaled from its covering tests' baseline time (at most mutant_timeout_sec) instead of a flat wait.
    mutant_timeout_factor: float = Field(
        10.0, ge=1.0, description="A mutant's covering tests may take this many times their baseline duration.")
    mutant_timeout_floor_sec: float = Field(
        2.0, gt=0, description="Added to the scaled limit: start-up and a loaded machine's slack.")
    # One forked child per CPU the sandbox may use; more only queue for the same CPUs.
    gate_workers: int = Field(0, ge=0, le=32, description="Mutants gated at once (0: one per sandbox CPU).")
    memory_mb: int = Field(4096, ge=256, description="Memory limit of sandboxed runs.")
    cpus: float = Field(1.0, gt=0, description="CPU limit of sandboxed runs.")
    pids: int = Field(512, ge=32, description="Process limit of sandboxed runs (fork bombs).")

    # --- the emitted tasks ----------------------------------------------------------------------
    harbor_verifier: HarborVerifierMode = Field(
        "separate", description="`separate`: Harbor grades in a fresh container (Harbor >= 0.13); `shared`: older form."
    )
    agent_timeout_sec: float = Field(1800, gt=0, description="[agent] timeout_sec in task.toml.")
    # An egress guard for the agent: with "no-network" Harbor (>= 0.2x network policies) runs the agent
    # with no network, so nothing can be fetched from outside (a newer release of the repo, say).
    # `auto` (issue 33): a real-history task's fix is upstream, a fetch away, so its agent gets no network;
    # a mutation task's B exists nowhere, and its tasks keep Harbor's default as before.
    agent_network: Literal["auto", "default", "no-network"] = Field(
        "auto", description="`no-network` writes [agent] network_mode so Harbor cuts the agent off the network; "
                            "`auto`: no-network for real-history (commit_pair) tasks, Harbor's default for mutants.")
    verifier_timeout_sec: float = Field(600, gt=0, description="[verifier] timeout_sec in task.toml.")
    verifier_run_timeout_sec: float = Field(120, gt=0, description="Wall clock of one pytest run inside the verifier.")
    verifier_case_timeout_sec: float = Field(60, gt=0, description="Wall clock of one test case's call inside the verifier.")
    # 4 + 4: a case whose pass/fail is a coin (p) earns at most p⁵(1−p)⁴ ≤ 0.0021 in expectation (A and its
    # four rewrites must pass, the four rewrites of B fail); the runs after A's start together.
    twin_runs: int = Field(4, ge=1, le=16, description="Rewrites of A (and as many of B) each grading runs the tests on.")
    validate_tasks: bool = Field(True, description="Run every emitted task as Harbor would before keeping it.")

    @model_validator(mode="after")
    def _loc_range(self) -> "TestSynthesisOptions":
        if self.min_loc > self.max_loc:
            raise ValueError(f"min_loc ({self.min_loc}) must not exceed max_loc ({self.max_loc})")
        return self

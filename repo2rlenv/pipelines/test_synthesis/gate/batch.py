"""Batch gating: the gates of `gates.GateRunner`, run for many candidates by one worker process per batch.

`GateRunner` starts a pytest subprocess per candidate (≈1 s each, mostly pytest start-up). Here the
standalone worker folder (`worker/`, entry `gate_worker.py`) is copied into the session and run once per
batch: it imports pytest and the repo once and forks a child per mutant (see its docstring for how the
verdicts stay equal to a subprocess run). The fields filled on each candidate, and the reasons it is dropped for, are exactly
`GateRunner.check`'s, so either runner can drive the pipeline. Candidates the worker cannot judge (B
changes several files, or the worker gave no verdict) go through `GateRunner` itself.
"""

from __future__ import annotations

import json
import posixpath
from enum import Enum

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from repo2rlenv.baseline.runner import BaselineReport, SuiteRunner
from repo2rlenv.errors import SandboxError
from repo2rlenv.payload import payload_files
from repo2rlenv.pipelines.test_synthesis.candidates import Candidate
from repo2rlenv.pipelines.test_synthesis.options import TestSynthesisOptions
from repo2rlenv.pysource.functions import FunctionRecord
from repo2rlenv.pipelines.test_synthesis.gate.gates import (
    GateRunner,
    GateTimeouts,
    GateVerdict,
    covering_ran,
    import_broken,
    imports_fine,
    prepare_candidate,
    timed_out,
)

# The worker's folder, shipped whole into the session (gate_worker.py imports its gate_*.py siblings).
WORKER_PACKAGE = "repo2rlenv.pipelines.test_synthesis.gate.worker"
WORKER_NAME = "gate_worker.py"
# The worker's warm-up (collecting the union of the batch's tests once) gets this long at most.
_WARMUP_TIMEOUT_SEC = 600.0
# Slack on top of the batch's worst case for forking, reaping and writing results.
_BATCH_SLACK_SEC = 60.0


class WorkerStatus(str, Enum):
    """A job's verdict from the worker."""

    survived = "survived"
    killed = "killed"
    timeout = "timeout"
    import_error = "import_error"
    error = "error"


class WorkerJob(BaseModel):
    """One mutant for the worker: the mutated module and the tests to run on it."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="The candidate id.")
    path: str = Field(description="POSIX path of the mutated module, relative to the repo root.")
    module: str = Field(description="Its importable dotted name.")
    qualname: str = Field(description="The mutated function (informational; the worker diffs the code).")
    mutated_source: str = Field(description="The whole module on B.")
    tests: list[str] = Field(description="Node ids to run; empty means an import check only.")
    timeout_sec: float = Field(gt=0, description="Wall clock for this job's tests.")


class WorkerSpec(BaseModel):
    """The batch file the worker reads (`--spec`)."""

    model_config = ConfigDict(extra="forbid")

    rootdir: str = Field(description="The work copy of the repo (pytest's --rootdir and the cwd).")
    basetemp: str = Field(description="Scratch dir for the worker's logs and pytest's --basetemp.")
    workers: int = Field(1, ge=1, description="Children running at once.")
    exitfirst: bool = Field(True, description="Stop a job's tests at the first one that notices the mutant.")
    pytest_args: list[str] = Field(default_factory=list,
                                   description="Options every pytest run of the repo gets (SuiteRunner.pytest_args).")
    jobs: list[WorkerJob]


class WorkerResult(BaseModel):
    """One line of the worker's `--out` file."""

    model_config = ConfigDict(extra="ignore")

    id: str
    status: WorkerStatus
    failing: list[str] = Field(default_factory=list, description="Tests that did not pass on B.")
    duration: float = Field(0.0, description="Seconds from fork to verdict.")
    mode: str | None = Field(None, description="`swap` (__code__ replaced) or `fresh` (repo re-imported).")
    detail: str = ""


class BatchGateRunner:
    """Runs the gates of many candidates with one worker exec per `check_many` call."""

    def __init__(self, runner: SuiteRunner, baseline: BaselineReport, *, timeout: float | GateTimeouts,
                 workers: int = 1):
        self.runner = runner
        self.session = runner.session
        self.baseline = baseline
        self.timeouts = timeout if isinstance(timeout, GateTimeouts) else GateTimeouts(cap=timeout)
        self.timeout = self.timeouts.cap
        self.workers = workers
        self.stable = set(baseline.stable_passing)
        self.root = posixpath.join(self.session.scratch, "fastgate", "repo")
        self.tmp = posixpath.join(self.session.scratch, "fastgate", "tmp")
        self.worker = posixpath.join(self.session.scratch, "fastgate", WORKER_NAME)
        # Verdicts of the last batch by candidate id (mode and timing included), for reports and tests.
        self.results: dict[str, WorkerResult] = {}
        self.last_summary: dict = {}
        self._fallback: GateRunner | None = None
        # A second runner on the same session starts from a clean copy (cp -a into an existing dir nests).
        self.session.exec(["rm", "-rf", self.root], timeout=120)
        self.session.exec(["mkdir", "-p", posixpath.dirname(self.root)], timeout=60)
        res = self.session.exec(["cp", "-a", self.session.workspace, self.root], timeout=300)
        if res.exit_code != 0:
            raise SandboxError(f"cannot make the gate work copy: {res.tail(3)}")
        folder = posixpath.dirname(self.worker)
        self.session.write_files({posixpath.join(folder, name): text for name, text in payload_files(WORKER_PACKAGE).items()})

    def covering(self, func: FunctionRecord, lines: list[int]) -> list[str]:
        return sorted(self.baseline.coverage.tests_covering(func.path, lines) & self.stable)

    def check(self, cand: Candidate) -> Candidate:
        """Gate one candidate (`GateRunner.check`'s interface)."""
        return self.check_many([cand])[0]

    def check_many(self, candidates: list[Candidate]) -> list[Candidate]:
        """Gate every candidate (in place); returns them in the same order."""
        jobs: list[tuple[Candidate, WorkerJob]] = []
        slow: list[Candidate] = []
        for cand in candidates:
            # The worker puts one changed module in, the touched function's own; anything else (several
            # files, or a change outside that module) goes through the subprocess gate.
            if list(cand.files_b) != [cand.function.path]:
                slow.append(cand)
                continue
            if self._prepare(cand):
                jobs.append((cand, WorkerJob(
                    id=cand.candidate_id, path=cand.function.path, module=cand.function.module,
                    qualname=cand.function.qualname, mutated_source=cand.files_b[cand.function.path],
                    tests=cand.line_tests, timeout_sec=self.timeouts.for_tests(self.baseline, cand.line_tests))))
        results = self._run_worker([job for _, job in jobs]) if jobs else {}
        self.results = results
        for cand, job in jobs:
            result = results.get(job.id)
            if result is None or result.status == WorkerStatus.error:
                slow.append(cand)
                continue
            self._apply(cand, result)
        for cand in slow:
            self._check_slowly(cand)
        return candidates

    # --- steps ----------------------------------------------------------------------------------

    def _prepare(self, cand: Candidate) -> bool:
        """GateRunner's host-side part: coverage, covering tests, the compile gate. False when dropped."""
        return prepare_candidate(cand, self.baseline, self.stable)

    def _run_worker(self, jobs: list[WorkerJob]) -> dict[str, WorkerResult]:
        spec = WorkerSpec(rootdir=self.root, basetemp=self.tmp, workers=self.workers, jobs=jobs,
                          pytest_args=self.runner.pytest_args())
        spec_path = posixpath.join(self.tmp, "batch.json")
        out_path = posixpath.join(self.tmp, "results.jsonl")
        self.session.exec(["rm", "-rf", self.tmp], timeout=60)
        self.session.write_files({spec_path: spec.model_dump_json()})
        budget = _WARMUP_TIMEOUT_SEC + _BATCH_SLACK_SEC + sum(j.timeout_sec + 5 for j in jobs) / self.workers
        res = self.session.exec([self.session.python, self.worker, "--spec", spec_path, "--out", out_path],
                                cwd=self.root, env={"PYTHONPATH": self.runner.pythonpath(self.root)},
                                timeout=budget)
        lines = (res.stdout or "").strip().splitlines()
        try:
            self.last_summary = json.loads(lines[-1]) if lines else {}
        except ValueError:
            self.last_summary = {}
        self.last_summary["exit_code"] = res.exit_code
        if res.exit_code != 0:
            self.last_summary["output_tail"] = res.tail(10)
        data = self.session.read_file(out_path) or b""
        results: dict[str, WorkerResult] = {}
        for line in data.decode("utf-8", "replace").splitlines():
            try:
                result = WorkerResult.model_validate_json(line)
            except ValidationError:
                continue  # a line cut short by a killed worker: that job is re-run the slow way
            results[result.id] = result
        return results

    def _apply(self, cand: Candidate, result: WorkerResult) -> None:
        """Record the worker's outcome through the verdicts `GateRunner.check` uses for the same outcome."""
        _verdict(cand.line_tests, result).apply(cand)

    def _check_slowly(self, cand: Candidate) -> None:
        """The subprocess gate, for what the worker could not judge; starts from a clean record."""
        if self._fallback is None:
            self._fallback = GateRunner(self.runner, self.baseline, timeout=self.timeouts)
        cand.gates = []
        cand.killed, cand.status, cand.skip_reason = None, "pending", None
        self._fallback.check(cand)


def gate_runner_for(options: TestSynthesisOptions, runner: SuiteRunner, baseline: BaselineReport) -> BatchGateRunner:
    """The batch gate runner the options ask for: one warm worker per batch, forking a child per candidate."""
    workers = options.gate_workers or max(1, int(options.cpus))
    timeouts = GateTimeouts(cap=options.mutant_timeout_sec, factor=options.mutant_timeout_factor,
                            floor=options.mutant_timeout_floor_sec)
    return BatchGateRunner(runner, baseline, timeout=timeouts, workers=workers)


def _verdict(tests: list[str], result: WorkerResult) -> GateVerdict:
    """The worker's outcome for a candidate whose changed-line tests are `tests`, as a gate verdict."""
    if result.status == WorkerStatus.import_error:
        return import_broken(result.detail, result.duration, tests=tests)
    if not tests:
        return imports_fine(result.duration)
    if result.status == WorkerStatus.timeout:
        return timed_out(result.duration)
    failing = sorted(result.failing) if result.status == WorkerStatus.killed else []
    return covering_ran(tests, failing, result.duration)

"""`repo2rlenv validate`: run each task the way Harbor does, in Docker, and check its rewards.

For every task: build `environment/`, start a container, run `solution/solve.sh`, and grade — in a fresh
container that receives only the artifact (separate mode) or in the same one (shared mode) — by copying
`tests/` to /tests and running `tests/test.sh`. The oracle must score 1.0, an empty submission 0.0, and
the repo's own tests of the module, submitted as the agent's file, less than 0.5.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any, Callable

from pydantic import BaseModel, ConfigDict, Field

from repo2rlenv.errors import SandboxError, SandboxUnavailable
from repo2rlenv.sandbox.base import Limits
from repo2rlenv.digest import tree_digest
from repo2rlenv.sandbox.docker import LABEL, DockerSession, base_image_id, docker_client
from repo2rlenv.dataset.taskdir import TaskPaths

# History: 1 = first version.
VALIDATION_SCHEMA_VERSION = 1
EXISTING_TESTS_CEILING = 0.5


class RunOutcome(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reward: float | None
    details: dict[str, Any] = Field(default_factory=dict)
    duration_sec: float = 0.0
    timed_out: bool = False


class ValidationResult(BaseModel):
    """What validating one task found."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = VALIDATION_SCHEMA_VERSION
    task_id: str
    ok: bool
    oracle: RunOutcome
    empty: RunOutcome
    existing: RunOutcome | None = None
    problems: list[str] = Field(default_factory=list)

    def a_crash(self) -> tuple[str, bool] | None:
        """(the line saying why, whether no case had run) when the oracle's graded run on A crashed (no
        report: a plugin that cannot load, a kill, a native module refused mid-run); else None."""
        run = _run_on_a(self.oracle.details)
        if run is None or run.get("status") != "crashed":
            return None
        return crash_line(str(run.get("output_tail") or "")), not run.get("n_cases")


def _run_on_a(details: dict[str, Any]) -> dict[str, Any] | None:
    runs = details.get("variants")
    for run in runs if isinstance(runs, list) else []:
        if isinstance(run, dict) and run.get("name") == "A":
            return run
    return None


# What seccomp's refusal of a new executable mapping looks like from the loader: a module the graded runs'
# native allowlist refuses (verifier_native), imported after the barrier.
_REFUSED_MAPPING = "failed to map segment"


def crash_line(tail: str) -> str:
    """The line of a crashed run's output that says why: pytest's "Error while loading plugin" and the last
    error line (`E   ...`), else the last line; said to be a native-allowlist refusal when it is one."""
    lines = [ln.strip() for ln in tail.splitlines() if ln.strip()]
    if not lines:
        return "no output (killed?)"
    plugin = next((ln for ln in lines if ln.startswith("Error while loading plugin")), None)
    error = next((ln for ln in reversed(lines) if ln.startswith("E ")), None)
    parts = [p for p in (plugin, error[1:].strip() if error else None) if p] or [lines[-1]]
    line = ": ".join(parts)
    if _REFUSED_MAPPING in tail:
        line += " (a native module the graded runs' allowlist refuses, verifier_native)"
    return line[:400]


def _oracle_problem(oracle: RunOutcome) -> str | None:
    """Why the oracle's grading is not a pass (with the crash's own line when its run on A crashed)."""
    if oracle.reward == 1.0:
        return None
    run = _run_on_a(oracle.details)
    why = f" — {crash_line(str(run.get('output_tail') or ''))}" if run and run.get("status") == "crashed" else ""
    return f"oracle scored {oracle.reward} (needs 1.0): {oracle.details.get('reason', '')}{why}"


def task_image_tag(task: TaskPaths) -> str:
    """The tag of the task's environment image: its name and its environment dir's content."""
    return f"repo2rlenv-task/{task.root.name.lower()}:{tree_digest(task.environment)[:16]}"


# The ID of the base image a task image was built on: a task image cached from an older base (dev_setup
# rebuilds the base when the kernel extension's source changes) carries the old extension, and a verifier
# that speaks the new one then met an old one in every grading.
BASE_LABEL = "repo2rlenv.base-image"


def _base_image_id(client: Any, task: TaskPaths) -> str | None:
    """The ID of the image the task's Dockerfile starts FROM, as the daemon has it now (None: unknown; the
    build then says what is missing)."""
    try:
        lines = (task.environment / "Dockerfile").read_text(encoding="utf-8").splitlines()
        return base_image_id(client, next(line.split()[1] for line in lines
                                          if line.strip().upper().startswith("FROM ")))
    except (OSError, StopIteration, IndexError, SandboxUnavailable):
        return None


def build_task_image(client: Any, task: TaskPaths) -> str:
    """Build the task's environment image (cached by the environment dir's content and its base image)."""
    tag = task_image_tag(task)
    base = _base_image_id(client, task)
    try:
        cached = client.images.get(tag)
        if base is None or (cached.labels or {}).get(BASE_LABEL) == base:
            return tag
    except Exception:
        pass
    try:
        client.images.build(path=str(task.environment), tag=tag, rm=True, forcerm=True, network_mode="host",
                            labels={LABEL: "task", **({BASE_LABEL: base} if base else {})})
    except Exception as exc:
        from repo2rlenv.sandbox.base import build_failure
        from repo2rlenv.sandbox.docker import build_log_text

        raise build_failure(f"building {task.root.name}'s environment failed", build_log_text(exc)) from exc
    return tag


def verifier_files(task: TaskPaths) -> dict[str, bytes]:
    """The task's tests/ as Harbor copies it into the verifier container: container path → bytes."""
    return {f"/tests/{p.relative_to(task.tests).as_posix()}": p.read_bytes()
            for p in task.tests.rglob("*") if p.is_file()}


def _read_outcome(session: DockerSession, logs: str, timed_out: bool, duration: float) -> RunOutcome:
    """reward.txt and reward-details.json of `logs` (a reward only when both are readable and in time)."""
    raw = session.read_file(f"{logs}/reward.txt")
    details_raw = session.read_file(f"{logs}/reward-details.json")
    try:
        details = json.loads(details_raw) if details_raw else {}
    except ValueError:
        details = {}
    try:
        reward = float(raw.decode().strip()) if raw and not timed_out else None
    except ValueError:
        reward = None
    return RunOutcome(reward=reward, details=details, duration_sec=duration, timed_out=timed_out)


BATCH_DIR = "/tests/batch"  # inside /tests: hidden from every run, as B and the config are


def grade_batch_in(session: DockerSession, tests: dict[str, bytes], timeout: float,
                   sources: list[str | None]) -> list[RunOutcome | None]:
    """Grade `sources` one after another with one verifier in `session` (`test.sh --batch`, see
    `verifier.score_batch`): each one's outcome, as `grade_in` would give it alone, or None for one the
    batch did not finish (the verifier was killed or crashed, an older verifier without batches, the
    batch ran out of time): the caller grades those alone. A grading that took longer than `timeout` is
    a timeout, as it would have been alone."""
    files = dict(tests)
    items = []
    for k, source in enumerate(sources):
        if source is not None:
            files[f"{BATCH_DIR}/{k}.py"] = source.encode()
        items.append({"name": str(k), "source": None if source is None else f"{k}.py"})
    files[f"{BATCH_DIR}/items.json"] = json.dumps(items).encode()
    session.write_files(files)
    session.exec(["bash", "/tests/test.sh", "--batch", BATCH_DIR], timeout=timeout * len(sources))
    outcomes: list[RunOutcome | None] = []
    for k in range(len(sources)):
        outcome = _read_outcome(session, f"/logs/verifier/{k}", False, 0.0)
        took = outcome.details.get("timings", {}).get("total") if outcome.details else None
        if outcome.reward is None or not isinstance(took, (int, float)):
            outcomes.append(None)
        elif took > timeout:
            outcomes.append(RunOutcome(reward=None, details=outcome.details, duration_sec=took, timed_out=True))
        else:
            outcomes.append(outcome.model_copy(update={"duration_sec": float(took)}))
    return outcomes


def grade_in(session: DockerSession, tests: dict[str, bytes], timeout: float) -> RunOutcome:
    """What Harbor's verifier step does in `session`: copy tests/ to /tests, run test.sh, read the reward.

    `reward` is None when test.sh did not finish in `timeout` or wrote no readable reward (Harbor then
    records no reward either); a 0 the script wrote is a verdict and comes back as 0.0."""
    session.write_files(tests)
    start = time.monotonic()
    res = session.exec(["bash", "/tests/test.sh"], timeout=timeout)
    return _read_outcome(session, "/logs/verifier", res.timed_out, time.monotonic() - start)


class TaskRunner:
    """Runs trials of one task: agent phase (a submission appears), then grading."""

    def __init__(self, client: Any, task: TaskPaths, image: str, limits: Limits):
        self.client = client
        self.task = task
        self.image = image
        self.limits = limits
        cfg = task.config()
        self.separate = cfg.verifier.environment_mode == "separate"
        self.artifacts: list[str] = list(cfg.artifacts)
        self.verifier_timeout = float(cfg.verifier.timeout_sec)
        self.test_path = cfg.metadata.repo2env.test_synthesis.test_path

    def _session(self) -> DockerSession:
        return DockerSession(self.client, self.image, self.limits, harden=False)

    def _grade(self, session: DockerSession) -> RunOutcome:
        return grade_in(session, verifier_files(self.task), self.verifier_timeout)

    def trial(self, agent: Callable[[DockerSession], None]) -> RunOutcome:
        """Run `agent` in a fresh container, then grade as the task's verifier mode says."""
        with self._session() as work:
            agent(work)
            if not self.separate:
                return self._grade(work)
            handed = {path: work.read_file(path) for path in self.artifacts}
        with self._session() as grader:
            grader.write_files({p: data for p, data in handed.items() if data is not None})
            return self._grade(grader)

    def solve_with_oracle(self, session: DockerSession) -> None:
        files = {f"/solution/{p.relative_to(self.task.solution).as_posix()}": p.read_bytes()
                 for p in self.task.solution.rglob("*") if p.is_file()}
        session.write_files(files)
        res = session.exec(["bash", "/solution/solve.sh"], timeout=120)
        if res.exit_code != 0:
            raise SandboxError(f"solve.sh failed: {res.tail(3)}")

    def submit_text(self, text: str) -> Callable[[DockerSession], None]:
        def agent(session: DockerSession) -> None:
            session.write_files({f"/workspace/{self.test_path}": text})

        return agent


def _existing_tests_text(task: TaskPaths) -> str | None:
    """The repo's own test file that covers the touched function most, to submit as the agent's file."""
    for rel in task.config().metadata.repo2env.test_synthesis.existing_test_files:
        path = task.repo / rel
        if path.is_file():
            return path.read_text()
    return None


def validate_task(task: TaskPaths, *, client: Any = None, limits: Limits | None = None,
                  check_existing: bool = True, image: str | None = None) -> ValidationResult:
    """Grade `task` as Harbor would (`image`: its environment, when already built)."""
    client = client or docker_client()
    limits = limits or Limits(timeout_sec=900, memory_mb=4096, cpus=2.0, pids=1024)
    image = image or build_task_image(client, task)
    runner = TaskRunner(client, task, image, limits)
    problems = []
    oracle = runner.trial(runner.solve_with_oracle)
    if (problem := _oracle_problem(oracle)) is not None:
        problems.append(problem)
    empty = runner.trial(lambda _s: None)
    if empty.reward != 0.0:
        problems.append(f"empty submission scored {empty.reward} (needs 0.0)")
    existing = None
    text = _existing_tests_text(task) if check_existing else None
    if text is not None:
        existing = runner.trial(runner.submit_text(text))
        if existing.reward is None or existing.reward >= EXISTING_TESTS_CEILING:
            problems.append(f"the repo's own tests scored {existing.reward} (needs < {EXISTING_TESTS_CEILING})")
    return ValidationResult(task_id=task.root.name, ok=not problems, oracle=oracle, empty=empty,
                            existing=existing, problems=problems)


def validate_task_locally(task: TaskPaths, *, python: str, check_existing: bool = True) -> ValidationResult:
    """The same three trials without Docker: the verifier runs on the host with `python` (process-level
    isolation only). Used when the run's sandbox is local."""
    import shutil
    import tempfile
    from pathlib import Path

    from repo2rlenv.verifiers.bundle import verifier_module

    test_path = task.config().metadata.repo2env.test_synthesis.test_path

    def trial(submission: str | None) -> RunOutcome:
        with tempfile.TemporaryDirectory(prefix="r2e-validate-") as tmp:
            workspace, logs = Path(tmp) / "workspace", Path(tmp) / "logs"
            shutil.copytree(task.repo, workspace, symlinks=True)
            if submission is not None:
                target = workspace / test_path
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(submission)
            start = time.monotonic()
            details = verifier_module().score(workspace, task.tests, logs, python=python)
            raw = (logs / "reward.txt").read_text().strip() if (logs / "reward.txt").exists() else None
            return RunOutcome(reward=float(raw) if raw else None, details=details,
                              duration_sec=time.monotonic() - start)

    oracle_text = (task.solution / Path(test_path).name).read_text()
    problems = []
    oracle = trial(oracle_text)
    if (problem := _oracle_problem(oracle)) is not None:
        problems.append(problem)
    empty = trial(None)
    if empty.reward != 0.0:
        problems.append(f"empty submission scored {empty.reward} (needs 0.0)")
    existing = None
    text = _existing_tests_text(task) if check_existing else None
    if text is not None:
        existing = trial(text)
        if existing.reward is None or existing.reward >= EXISTING_TESTS_CEILING:
            problems.append(f"the repo's own tests scored {existing.reward} (needs < {EXISTING_TESTS_CEILING})")
    return ValidationResult(task_id=task.root.name, ok=not problems, oracle=oracle, empty=empty,
                            existing=existing, problems=problems)


def summarize(result: ValidationResult, *, mode: str, task: TaskPaths):
    """The manifest's view of a validation."""
    from repo2rlenv.dataset.manifest import ValidationSummary

    return ValidationSummary(
        ok=result.ok, mode=mode, oracle_reward=result.oracle.reward, empty_reward=result.empty.reward,
        existing_tests_reward=result.existing.reward if result.existing else None, problems=result.problems,
        content_key=content_key(task))


def validate_dataset(root: Path, *, mode: str, python: str | None = None, only_changed: bool = True,
                     progress: Callable[[str], None] | None = None) -> list[ValidationResult]:
    """Validate every task of a dataset, record results, rewrite the manifest."""
    from repo2rlenv.dataset.manifest import load_validation, save_validation, write_manifest
    from repo2rlenv.dataset.taskdir import DatasetPaths

    dataset = DatasetPaths(root)
    client = docker_client() if mode == "docker" else None
    results = []
    for task_id in dataset.task_ids():
        task = dataset.task(task_id)
        previous = load_validation(dataset, task_id)
        if only_changed and previous is not None and previous.ok and previous.content_key == content_key(task) \
                and previous.mode == mode:
            if progress:
                progress(f"{task_id}: unchanged since its last passing validation")
            continue
        if mode == "docker":
            result = validate_task(task, client=client)
        else:
            result = validate_task_locally(task, python=python or sys.executable)
        save_validation(dataset, task_id, summarize(result, mode=mode, task=task))
        results.append(result)
        if progress:
            progress(f"{task_id}: {'ok' if result.ok else 'FAILED: ' + '; '.join(result.problems)}")
    write_manifest(dataset)
    return results


def content_key(task: TaskPaths) -> str:
    """Hash of a task's files, to skip re-validating unchanged tasks."""
    return tree_digest(task.root)[:16]

"""Run the solver over a dataset and grade every task; resumable, with a spend ceiling across tasks.

The eval directory:

```
<out>/
  settings.json            what the eval was started with; a resumed run must match it
  journal.jsonl            one TaskRecord per finished task, appended as each finishes
  ledgers/<task>.jsonl     every model call of a task (a killed attempt's is kept as <task>.aborted-N.jsonl;
                           with --tries, the k-th try of a task is <task>@k everywhere below and in the journal)
  trajectories/<task>.jsonl
  tests/<task>/<file>      the test file each task was graded on
  results.json  results.md  report.html
```

A killed eval keeps its journal: the next run skips the tasks finished there (a verdict or an error) and
runs the rest again — the interrupted task and every unfinished one (a model error, the spend ceiling;
`results.py`). Spend counts every ledger in the directory, aborted attempts and the model check
included, so a resumed eval honours the same ceiling. When the ceiling is reached the eval stops; the
tasks it did not reach are listed as not run, and a rerun with a higher ceiling picks them up. When
several model calls in a row fail for good (`ModelUnavailable`), the eval stops too: the results are
written, the task is unfinished, and the error reaches the command line. While no task has a verdict
yet, a rerun may change any setting (there is nothing the change would make incomparable).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from repo2rlenv.atomic import write_text
from repo2rlenv.errors import SandboxError
from repo2rlenv.eval.report_html import render_html
from repo2rlenv.eval.report_md import render_markdown
from repo2rlenv.eval.results import (
    UNFINISHED_STOPS,
    EvalResults,
    EvalSettings,
    RewardBreakdown,
    TaskRecord,
    TaskStatus,
    difficulty,
    run_id,
    totals,
)
from repo2rlenv.journal import Journal
from repo2rlenv.llm.client import CircuitBreaker
from repo2rlenv.llm.errors import ModelUnavailable
from repo2rlenv.llm.ledger import Ledger, LedgerEntry
from repo2rlenv.solver.clients import build_clients
from repo2rlenv.solver.config import SolverConfig
from repo2rlenv.solver.errors import SolverInputError
from repo2rlenv.solver.events import SolverHooks, Trajectory
from repo2rlenv.solver.result import StopReason
from repo2rlenv.solver.task_mode import TaskSolve, solve_task
from repo2rlenv.dataset.taskdir import DatasetPaths

class EvalPaths:
    """The eval directory's layout (module docstring); the only place that spells it."""

    def __init__(self, root: Path):
        self.root = root

    @property
    def settings(self) -> Path:
        return self.root / "settings.json"

    @property
    def journal(self) -> Path:
        return self.root / "journal.jsonl"

    @property
    def ledgers(self) -> Path:
        return self.root / "ledgers"

    @property
    def trajectories(self) -> Path:
        return self.root / "trajectories"

    @property
    def tests(self) -> Path:
        return self.root / "tests"

    @property
    def results_json(self) -> Path:
        return self.root / "results.json"

    @property
    def results_md(self) -> Path:
        return self.root / "results.md"

    @property
    def report_html(self) -> Path:
        return self.root / "report.html"

    def ledger(self, task_id: str) -> Path:
        return self.ledgers / f"{task_id}.jsonl"

    @property
    def model_checks(self) -> Path:
        """The model check's calls of every run (`llm/preflight.py`); a task id never starts with '_'."""
        return self.ledgers / "_model-checks.jsonl"

    def trajectory(self, task_id: str) -> Path:
        return self.trajectories / f"{task_id}.jsonl"

    def rel(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()


# Settings a resumed eval may change: where the model is reached and how much may be spent do not
# change what a finished task's result means (raising the ceiling is how a stopped eval continues).
RESUMABLE_CHANGES = frozenset({"base_url", "api_key_env", "max_spend_usd", "llm_timeout_sec", "llm_max_retries"})


def _settings(dataset: Path, config: SolverConfig, task_ids: list[str], tries: int) -> EvalSettings:
    return EvalSettings(dataset=str(dataset.resolve()), solver=config.model_dump(mode="json", exclude={"prices"}),
                        tasks=task_ids, tries=tries)


def _open_eval(paths: EvalPaths, settings: EvalSettings, restart: bool, verdicts: bool) -> None:
    if restart and paths.root.exists():
        for path in (paths.settings, paths.journal, paths.results_json, paths.results_md, paths.report_html):
            path.unlink(missing_ok=True)
        for sub in (paths.ledgers, paths.trajectories, paths.tests):
            shutil.rmtree(sub, ignore_errors=True)
    if paths.settings.is_file():
        before = EvalSettings.model_validate_json(paths.settings.read_text(encoding="utf-8"))
        changed = sorted(k for k in set(settings.solver) | set(before.solver)
                         if k not in RESUMABLE_CHANGES and before.solver.get(k) != settings.solver.get(k))
        if before.dataset != settings.dataset:
            changed.insert(0, "dataset")
        if changed and verdicts:
            raise SolverInputError(f"{paths.root} holds an eval with other settings ({', '.join(changed)}); "
                                   "pass --restart to discard it, or choose another --out")
    paths.root.mkdir(parents=True, exist_ok=True)
    write_text(paths.settings, settings.model_dump_json(indent=2) + "\n")


def _spent(paths: EvalPaths) -> float:
    """USD of every call this eval directory has recorded, aborted attempts included."""
    if not paths.ledgers.is_dir():
        return 0.0
    return sum(e.cost_usd or 0.0 for p in sorted(paths.ledgers.glob("*.jsonl")) for e in Ledger.read(p) if e.ok)


def _set_aside(path: Path) -> None:
    """Keep a killed attempt's file under another name (its calls were made; its spend counts)."""
    if not path.exists():
        return
    n = 1
    while (aside := path.with_name(f"{path.stem}.aborted-{n}{path.suffix}")).exists():
        n += 1
    path.rename(aside)


def _record(solved: TaskSolve, paths: EvalPaths, attempt: int = 1) -> TaskRecord:
    solve = solved.solve
    test_path = solve.target.test_path
    text = solve.files.get(test_path)
    name = run_id(solved.task_id, attempt)
    artifacts = {"trajectory": paths.rel(paths.trajectory(name)), "ledger": paths.rel(paths.ledger(name))}
    if text is not None:
        saved = paths.tests / name / Path(test_path).name
        write_text(saved, text)
        artifacts["tests"] = paths.rel(saved)
    return TaskRecord(
        task_id=solved.task_id, attempt=attempt,
        status=TaskStatus.UNFINISHED if solve.stop_reason.value in UNFINISHED_STOPS else TaskStatus.GRADED,
        grade=RewardBreakdown.from_details(solved.grade.reward, solved.grade.details),
        stop_reason=solve.stop_reason.value, stop_detail=solve.detail, rounds=solve.rounds, calls=solve.calls,
        prompt_tokens=solve.prompt_tokens, completion_tokens=solve.completion_tokens, cost_usd=solve.cost_usd,
        unpriced_calls=solve.unpriced_calls, duration_sec=solve.duration_sec + solved.grade.duration_sec,
        test_path=test_path, final_tests=text,
        last_tests=solve.last_report.summary() if solve.last_report else None, artifacts=artifacts)


def run_eval(dataset: Path, out: Path, config: SolverConfig, *, docker: Any,
             hooks_for: Callable[[str], SolverHooks] | None = None, progress: Callable[[str], None] | None = None,
             restart: bool = False, only: list[str] | None = None,
             model_checks: list[LedgerEntry] | None = None, tries: int = 1) -> EvalResults:
    """Solve and grade every task of `dataset` `tries` times, but for the tries finished in `out`'s journal;
    write the three result files. `model_checks` (the preflight's calls) go into the eval's ledgers.
    `ModelUnavailable` is raised after the results are written."""
    say = progress or (lambda _m: None)
    data = DatasetPaths(dataset)
    task_ids = data.task_ids()
    if only:
        unknown = sorted(set(only) - set(task_ids))
        if unknown:
            raise SolverInputError(f"no such task in {dataset}: {', '.join(unknown)}")
        task_ids = [t for t in task_ids if t in set(only)]
    if not task_ids:
        raise SolverInputError(f"not a repo2rlenv dataset (no tasks/ with tasks): {dataset}")
    paths = EvalPaths(out)
    journal: Journal[TaskRecord] = Journal(paths.journal, TaskRecord, "run_id")
    earlier = {} if restart else journal.load()
    _open_eval(paths, _settings(dataset, config, task_ids, tries), restart,
               verdicts=any(not r.unfinished for r in earlier.values()))
    done = journal.load()
    if model_checks:
        checks = Ledger(paths.model_checks)
        for entry in model_checks:
            checks.record(entry)
    breaker = CircuitBreaker()  # shared by every task: a dead endpoint stops the eval, not each task
    not_run: list[str] = []
    stopped: ModelUnavailable | None = None
    runs = [(task_id, attempt) for attempt in range(1, tries + 1) for task_id in task_ids]
    names = [run_id(task_id, attempt) for task_id, attempt in runs]
    for index, (task_id, attempt) in enumerate(runs):
        name = names[index]
        if name in done and not done[name].unfinished:
            say(f"{name}: done before ({done[name].outcome}, reward {done[name].reward:g}), skipped")
            continue
        if name in done:
            say(f"{name}: unfinished before ({done[name].stop_detail or done[name].outcome}), running again")
        spent = _spent(paths)
        if config.max_spend_usd is not None and spent >= config.max_spend_usd:
            not_run = [n for n in names[index:] if n not in done or done[n].unfinished]
            say(f"spend ceiling ${config.max_spend_usd:g} reached (${spent:.4f}); {len(not_run)} task(s) not run")
            break
        say(f"{name}: solving ({index + 1}/{len(runs)})")
        _set_aside(paths.ledger(name))
        _set_aside(paths.trajectory(name))
        ledger = Ledger(paths.ledger(name))
        try:
            clients = build_clients(config, ledger, spent_before_usd=spent, breaker=breaker)
            solved = solve_task(data.task(task_id), config, clients,
                                ledger, docker=docker, hooks=hooks_for(name) if hooks_for else None,
                                trajectory=Trajectory(paths.trajectory(name)), spent_before_usd=spent)
            record = _record(solved, paths, attempt)
        except (SandboxError, SolverInputError) as exc:
            # This task cannot run (its image does not build, its instruction names no target): record
            # it and go on. Model configuration errors are not caught: no later task could do better.
            record = TaskRecord(task_id=task_id, attempt=attempt, status=TaskStatus.ERROR, error=str(exc))
        except ModelUnavailable as exc:
            record = TaskRecord(task_id=task_id, attempt=attempt, status=TaskStatus.UNFINISHED,
                                stop_reason=StopReason.MODEL_ERROR.value, stop_detail=str(exc), error=str(exc))
            stopped = exc
        journal.append(record)
        done[name] = record
        say(f"{name}: {_line(record)}")
        if stopped is not None:
            not_run = [n for n in names[index + 1:] if n not in done or done[n].unfinished]
            say(f"stopped: {stopped}; {len(not_run)} task(s) not run (rerun to resume)")
            break
        if record.stop_reason == StopReason.SPEND_LIMIT.value:
            not_run = [n for n in names[index + 1:] if n not in done or done[n].unfinished]
            if not_run:
                say(f"spend ceiling reached; {len(not_run)} task(s) not run")
            break
    records = [done[n] for n in names if n in done]
    settings = EvalSettings.model_validate_json(paths.settings.read_text(encoding="utf-8"))
    results = EvalResults(settings=settings, totals=totals(records), tasks=records, not_run=not_run,
                          stopped=str(stopped) if stopped is not None else None,
                          difficulty=difficulty(records, _predicted_labels(data, task_ids)))
    write_results(results, paths)
    if stopped is not None:
        raise stopped
    return results


def _predicted_labels(data: DatasetPaths, task_ids: list[str]) -> dict[str, str]:
    """Each task's task.toml difficulty (predicted from features), to set beside the measured one."""
    out = {}
    for task_id in task_ids:
        try:
            out[task_id] = data.task(task_id).config().metadata.difficulty
        except (OSError, ValueError):
            # No readable task.toml: the report shows only the measured label (as it always has).
            continue
    return out


def _line(record: TaskRecord) -> str:
    """A task's outcome as the progress line shows it: the reward and the solver's stop, or why it did
    not finish (the model's own failure, so a user can act on it)."""
    if record.status is TaskStatus.ERROR:
        return f"error: {record.error}"
    if record.unfinished:
        return f"unfinished ({record.stop_reason}): {record.stop_detail or record.error or 'no detail'}"
    return f"reward {record.reward:g} ({record.stop_reason})"


def write_results(results: EvalResults, paths: EvalPaths) -> None:
    """results.json, then results.md, then report.html (which embeds the other two and the artifacts)."""
    write_text(paths.results_json, json.dumps(results.model_dump(mode="json"), indent=2) + "\n")
    write_text(paths.results_md, render_markdown(results))
    write_text(paths.report_html, render_html(results, paths.root))

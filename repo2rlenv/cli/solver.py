"""The `solve` and `eval` commands; `repo2rlenv/cli/main.py` registers `COMMANDS` with `main.add_command`.

Thin, like the rest of the CLI: parse flags, call task_mode / diff_mode / eval.harness, print live
progress through the solver's hooks (stderr) and a summary; `--json` puts the result on stdout.
Errors go through `repo2rlenv.cli.guard.guard`: one line, exit 2. Nothing here imports litellm or docker until a
command runs.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import click

from repo2rlenv.cli.guard import guard
from repo2rlenv.solver.errors import SolverInputError

if TYPE_CHECKING:  # the CLI imports this module at start; these load only when a command runs
    from repo2rlenv.progress import Reporter
    from repo2rlenv.solver.events import SolverHooks



def _model_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    opts = [
        click.option("--llm", "model", default=None, help="litellm model id (provider/model) for every call."),
        click.option("--llm-base-url", "base_url", default=None, help="OpenAI-compatible base URL."),
        click.option("--api-key-env", default=None, help="Environment variable with the API key."),
        click.option("--plan-llm", default=None, help="Model for the planning call (default: --llm)."),
        click.option("--generate-llm", default=None, help="Model for the first test file (default: --llm)."),
        click.option("--repair-llm", default=None, help="Model for repair calls (default: --llm)."),
        click.option("--config", "config_file", type=click.Path(path_type=Path), default=None,
                     help="TOML or YAML file with solver settings; flags override it."),
        click.option("--max-rounds", type=int, default=None, help="Generate + repair calls at most (default 4)."),
        click.option("--token-budget", type=int, default=None, help="Tokens per solve (default 200000)."),
        click.option("--max-spend-usd", type=float, default=None, help="Spend ceiling, checked before every call."),
        click.option("--no-plan", "no_plan", is_flag=True, default=False, help="Skip the planning call."),
        click.option("--pytest-k", "pytest_k", default=None, metavar="EXPR",
                     help="pytest -k for every run: the existing suite, the written tests, each repair."),
        click.option("--pytest-m", "pytest_m", default=None, metavar="EXPR",
                     help="pytest -m (markers) for every run: the existing suite, the written tests, each repair."),
        click.option("--no-coverage", "no_coverage", is_flag=True, default=False,
                     help="Do not measure coverage: tests are judged by pass/fail alone (the report says so)."),
        click.option("--timeout", "timeout", default=None, metavar="SECONDS",
                     help="Wall clock of one run of the written tests (default 120; 2.5 and 1e3 are numbers too)."),
        click.option("--verbose", "-v", is_flag=True, help="Print every model reply."),
        click.option("--json", "as_json", is_flag=True, help="Print the result as JSON on stdout."),
    ]
    for opt in reversed(opts):
        fn = opt(fn)
    return fn


def _config(config_file: Path | None, flags: dict[str, Any]):
    from repo2rlenv.solver.config import load_solver_config

    from repo2rlenv.solver.config import parse_seconds

    routing = {"plan": flags.pop("plan_llm"), "generate": flags.pop("generate_llm"), "repair": flags.pop("repair_llm")}
    if flags.pop("no_coverage", False):
        flags["coverage"] = False
    timeout = flags.pop("timeout", None)
    if timeout is not None:
        flags["test_timeout_sec"] = parse_seconds(timeout, "--timeout")
    if flags.pop("no_plan"):
        flags["plan"] = False
    return load_solver_config(config_file, {**flags, "routing": {k: v for k, v in routing.items() if v}})


def check_models(config: Any, reporter: "Reporter") -> list[Any]:
    """The settings' every model checked before any container starts (`llm/preflight.py`): a bad id, a
    missing key or a dead endpoint is one line and exit 2, with nothing written. Returns the check's
    ledger entries for the run's ledger."""
    from repo2rlenv.llm.ledger import Ledger
    from repo2rlenv.llm.preflight import ModelSetting, preflight
    from repo2rlenv.solver.clients import build_clients

    build_clients(config, Ledger())  # settings only: a missing price for --max-spend-usd, a missing key variable
    where = f" at {config.base_url}" if config.base_url else ""
    reporter.stage(f"checking {', '.join(config.models())}{where}")
    return preflight([ModelSetting(m, config.base_url, config.api_key_env) for m in config.models()],
                     warn=reporter.warn)


def model_stop_line(stop_reason: str, detail: str) -> str | None:
    """What to print when a solve ended because of the model (a failed call, the spend ceiling)."""
    from repo2rlenv.eval.results import UNFINISHED_STOPS

    if stop_reason not in UNFINISHED_STOPS:
        return None
    return f"unfinished ({stop_reason}): {detail or 'no detail'}"


def progress_hooks(reporter: "Reporter", *, prefix: str = "", verbose: bool = False) -> "SolverHooks":
    """Hooks that print the loop's progress: tool calls, round ends and (verbose) every reply."""
    from repo2rlenv.solver.events import RoundSummary, SolverHooks, ToolEvent

    def on_tool_call(event: ToolEvent) -> None:
        if event.tool == "run_existing_tests":
            reporter.info(f"{prefix}measuring which lines the existing tests run")
        elif event.tool == "run_tests":
            reporter.info(f"{prefix}  running {', '.join(event.args.get('paths', []))}")

    def on_reply(role: str, text: str) -> None:
        if role == "plan":
            reporter.info(f"{prefix}planned ({len(text)} characters)")
        if verbose:
            reporter.info(f"{prefix}--- {role} reply ---\n{text.rstrip()}\n{prefix}--- end ---")

    def on_round_end(summary: RoundSummary) -> None:
        reporter.info(f"{prefix}round {summary.round} ({summary.role}): {summary.summary}")

    return SolverHooks(on_reply=on_reply, on_tool_call=on_tool_call, on_round_end=on_round_end)


def _slug(text: str) -> str:
    return re.sub(r"[^0-9A-Za-z_.-]+", "_", text).strip("_")


def _solve_task(task_dir: Path, out: Path | None, config_file: Path | None, flags: dict[str, Any],
                verbose: bool, as_json: bool) -> int:
    from repo2rlenv.atomic import write_text
    from repo2rlenv.eval.formatting import usd
    from repo2rlenv.llm.ledger import Ledger
    from repo2rlenv.progress import Reporter
    from repo2rlenv.sandbox.docker import docker_client
    from repo2rlenv.solver.clients import build_clients
    from repo2rlenv.solver.events import Trajectory
    from repo2rlenv.solver.task_mode import check_task_dir, solve_task
    from repo2rlenv.dataset.taskdir import TaskPaths

    task = TaskPaths(task_dir)
    check_task_dir(task)
    config = _config(config_file, flags)
    reporter = Reporter(quiet=as_json)
    checks = check_models(config, reporter)
    docker = docker_client()
    # Only now is the run going ahead: an earlier refused run leaves the previous results in --out alone.
    out = out or Path("r2e-solve") / task_dir.resolve().name
    out.mkdir(parents=True, exist_ok=True)
    for name in ("ledger.jsonl", "trajectory.jsonl", "solve-result.json"):
        (out / name).unlink(missing_ok=True)
    ledger = Ledger(out / "ledger.jsonl")
    for entry in checks:
        ledger.record(entry)
    clients = build_clients(config, ledger)
    reporter.stage(f"solving {task_dir.name} with {config.model}")
    solved = solve_task(task, config, clients, ledger, docker=docker,
                        hooks=progress_hooks(reporter, verbose=verbose), trajectory=Trajectory(out / "trajectory.jsonl"))
    write_text(out / "solve-result.json", solved.model_dump_json(indent=2) + "\n")
    test_path = solved.solve.target.test_path
    if test_path in solved.solve.files:
        write_text(out / Path(test_path).name, solved.solve.files[test_path])
    details = solved.grade.details
    reporter.table("result", ["stop", "rounds", "tokens", "cost", "reward", "b_pass", "b_fail", "cov"], [[
        solved.solve.stop_reason.value, solved.solve.rounds, solved.solve.tokens,
        usd(solved.solve.cost_usd, solved.solve.unpriced_calls),
        solved.grade.reward, details.get("b_pass"), details.get("b_fail"), details.get("cov")]])
    for line in solved.solve.unverified:
        reporter.warn(f"not verified: {line}")
    model_line = model_stop_line(solved.solve.stop_reason.value, solved.solve.detail)
    if model_line is not None:
        reporter.warn(model_line)
    elif details.get("reason"):
        reporter.info(f"verifier: {details['reason']}")
    reporter.info(f"trajectory, ledger and result in {out}")
    if as_json:
        click.echo(solved.model_dump_json(indent=2))
    return 0 if solved.grade.reward == 1.0 else 1


def _solve_diff(repo: Path, diff_file: Path | None, git_base: str | None, out: Path | None, patch: Path | None,
                sandbox_choice: str, base_image: str | None, max_functions: int, targets: list[str],
                python: str | None, config_file: Path | None, flags: dict[str, Any], verbose: bool,
                as_json: bool) -> int:
    from repo2rlenv.atomic import write_text
    from repo2rlenv.config import DEFAULT_BASE_IMAGE
    from repo2rlenv.llm.ledger import Ledger
    from repo2rlenv.progress import Reporter
    from repo2rlenv.sandbox.base import Limits
    from repo2rlenv.sandbox.select import choose_sandbox
    from repo2rlenv.solver.clients import build_clients
    from repo2rlenv.solver.diff_mode import chosen_functions, diff_from_git, solve_diff
    from repo2rlenv.solver.events import Trajectory
    from repo2rlenv.solver.loop import Solver
    from repo2rlenv.solver.target import Target, is_test_file
    from repo2rlenv.sources import default_cache_dir

    if not repo.is_dir():
        raise SolverInputError(f"--repo must be a directory: {repo}")
    if diff_file is not None and not diff_file.is_file():
        raise SolverInputError(f"--diff file not found: {diff_file}")
    diff = diff_file.read_text(encoding="utf-8") if diff_file is not None else diff_from_git(repo, git_base or "")
    config = _config(config_file, flags)
    if targets:
        chosen_functions(repo, diff, targets)  # a target that names no function is refused before any work
    reporter = Reporter(quiet=as_json)
    checks = check_models(config, reporter)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
    ledger = Ledger(out / "ledger.jsonl" if out else None)
    for entry in checks:
        ledger.record(entry)
    clients = build_clients(config, ledger)
    sandbox = choose_sandbox(sandbox_choice, base_image=base_image or DEFAULT_BASE_IMAGE,
                             limits=Limits(timeout_sec=900), cache_dir=default_cache_dir(),
                             tag_name=f"solve-{_slug(repo.resolve().name).lower()}", warn=reporter.warn,
                             python=python)

    def make_solver(target: Target) -> Solver:
        trajectory = Trajectory(out / "trajectories" / f"{_slug(target.path)}__{_slug(target.qualname)}.jsonl"
                                if out else None)
        hooks = progress_hooks(reporter, prefix=f"[{target.qualname}] ", verbose=verbose)
        return Solver(clients, config, ledger, hooks=hooks, trajectory=trajectory)

    result = solve_diff(repo, diff, sandbox, make_solver, max_functions=max_functions, targets=targets,
                        progress=reporter.stage)
    # The files each solve wrote (the model may choose another new test path than the one suggested).
    rows = [[f.target.key, f.solve.stop_reason.value, f.solve.rounds,
             ", ".join(sorted(p for p in f.solve.files if is_test_file(p))) if f.in_patch else "-"]
            for f in result.functions]
    reporter.table("functions", ["function", "stop", "rounds", "in patch"], rows)
    for line in result.skipped:
        reporter.info(f"skipped: {line}")
    for f in result.functions:
        if f.solve.verdict is not None or f.solve.stop_reason.value == "code_bug":
            reporter.warn(f"{f.target.qualname}: VERDICT: CODE_BUG — {f.solve.verdict or f.solve.detail}")
        elif (line := model_stop_line(f.solve.stop_reason.value, f.solve.detail)) is not None:
            reporter.warn(f"{f.target.qualname}: {line}")
    for line in config.unverified():
        reporter.warn(f"not verified: {line}")
    if not result.patch:
        reporter.warn("no passing tests: the patch is empty" + ("" if as_json else " (nothing on stdout)"))
    if out is not None:
        from repo2rlenv.solver.report import build_report, write_reports

        write_text(out / "solve-result.json", result.model_dump_json(indent=2) + "\n")
        write_reports(out, build_report(repo, git_base, diff, config, result))
        reporter.info(f"report.json, report.md and report.html in {out}")
    if patch is not None:
        write_text(patch, result.patch)
        reporter.info(f"patch written to {patch}")
    elif not as_json:
        click.echo(result.patch, nl=False)
    if as_json:
        click.echo(result.model_dump_json(indent=2))
    return 0 if result.patch else 1


class _SolveGroup(click.Group):
    """`solve TASK_DIR` and `solve --repo …` run the solver (the `run` command, implied); `solve recheck`,
    `regression`, `compare` and `history` work on saved diff-mode reports without a model."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args or args[0] not in self.commands or args[0] == "run":
            args = ["run", *(args[1:] if args and args[0] == "run" else args)]
        return super().parse_args(ctx, args)


@click.group(cls=_SolveGroup)
def solve() -> None:
    """Write tests with the reference solver; `solve recheck|regression|compare|history` for saved runs."""


def _rerun_sandbox(choice: str, base_image: str | None, repo: Path, reporter: "Reporter", side: str = ""):
    from repo2rlenv.config import DEFAULT_BASE_IMAGE
    from repo2rlenv.sandbox.base import Limits
    from repo2rlenv.sandbox.select import choose_sandbox
    from repo2rlenv.sources import default_cache_dir

    return choose_sandbox(choice, base_image=base_image or DEFAULT_BASE_IMAGE, limits=Limits(timeout_sec=900),
                          cache_dir=default_cache_dir(), tag_name=f"solve-{_slug(repo.resolve().name).lower()}{side}",
                          warn=reporter.warn)


def _saved(path: Path):
    from repo2rlenv.solver.report import load_report

    try:
        return load_report(path)
    except ValueError as exc:
        raise SolverInputError(str(exc)) from None


def _saved_with_repo(report_dir: Path, repo: Path | None):
    """A saved report and the repository its reruns use (`--repo`, else the report's own)."""
    report = _saved(report_dir)
    where = repo or Path(report.repo)
    if not where.is_dir():
        raise SolverInputError(f"the repository is not a directory: {where} (pass --repo)")
    return report, where


_SANDBOX = click.option("--sandbox", "sandbox_choice", type=click.Choice(["auto", "docker", "local"]), default="auto",
                        show_default=True, help="Where the tests run.")
_BASE_IMAGE = click.option("--base-image", default=None, help="Base image of the Docker sandbox.")


@solve.command()
@click.argument("report_dir", type=click.Path(path_type=Path))
@click.option("--repo", type=click.Path(path_type=Path), default=None, help="The repository (default: the report's).")
@_SANDBOX
@_BASE_IMAGE
@click.option("--json", "as_json", is_flag=True, help="Print the updated report as JSON on stdout.")
def recheck(report_dir: Path, repo: Path | None, sandbox_choice: str, base_image: str | None, as_json: bool) -> None:
    """Rerun a saved run's test files on the repository as it is now (no model); update its reports."""

    def body() -> int:
        from repo2rlenv.progress import Reporter
        from repo2rlenv.solver.report import write_reports
        from repo2rlenv.solver.reruns import recheck as run_recheck

        report, where = _saved_with_repo(report_dir, repo)
        reporter = Reporter(quiet=as_json)
        reporter.stage(f"rechecking {len(report.files)} test file(s) on {where}")
        updated = run_recheck(report, where, _rerun_sandbox(sandbox_choice, base_image, where, reporter))
        write_reports(report_dir, updated)
        rows = [[c.nodeid, c.outcome] for c in updated.recheck.cases]
        reporter.table("recheck", ["case", "outcome"], rows)
        reporter.info(f"recheck {'passed' if updated.recheck.passed else 'FAILED'}; reports updated in {report_dir}")
        if as_json:
            click.echo(updated.model_dump_json(indent=2))
        return 0 if updated.recheck.passed else 1

    guard(body)


@solve.command()
@click.argument("report_dir", type=click.Path(path_type=Path))
@click.option("--before", required=True, help="The revision without the change (a git ref).")
@click.option("--after", required=True, help="The revision with the change (a git ref).")
@click.option("--repo", type=click.Path(path_type=Path), default=None, help="The git repository (default: the report's).")
@_SANDBOX
@_BASE_IMAGE
@click.option("--json", "as_json", is_flag=True, help="Print regression.json on stdout.")
def regression(report_dir: Path, before: str, after: str, repo: Path | None, sandbox_choice: str,
               base_image: str | None, as_json: bool) -> None:
    """Run a saved run's tests on two revisions: exit 0 when a case fails before and passes after."""

    def body() -> int:
        from repo2rlenv.atomic import write_text
        from repo2rlenv.progress import Reporter
        from repo2rlenv.solver.reruns import regression as run_regression

        report, where = _saved_with_repo(report_dir, repo)
        reporter = Reporter(quiet=as_json)
        reporter.stage(f"running {len(report.files)} test file(s) on {before} and on {after}")
        result = run_regression(report, where, before, after,
                                lambda side: _rerun_sandbox(sandbox_choice, base_image, where, reporter, f"-{side}"))
        write_text(report_dir / "regression.json", result.model_dump_json(indent=2) + "\n")
        reporter.table("regression", ["case", before, after],
                       [[c.nodeid, c.before, c.after] for c in result.cases])
        reporter.info(f"{result.verdict}: {len(result.witnesses)} case(s) fail on {before} and pass on {after}"
                      + (f"; inconclusive: {', '.join(result.inconclusive)}" if result.inconclusive else ""))
        if as_json:
            click.echo(result.model_dump_json(indent=2))
        return 0 if result.verdict == "witnessed" else 1

    guard(body)


@solve.command()
@click.option("--before", "before", required=True, type=click.Path(path_type=Path), help="The earlier report (dir or report.json).")
@click.option("--after", "after", required=True, type=click.Path(path_type=Path), help="The later report.")
@click.option("--out", required=True, type=click.Path(path_type=Path), help="The comparison page to write (.html).")
def compare(before: Path, after: Path, out: Path) -> None:
    """Compare two saved reports function by function; write one self-contained page."""

    def body() -> int:
        from repo2rlenv.solver.history import write_compare

        _saved(before), _saved(after)
        write_compare(before, after, out)
        click.echo(f"wrote {out}", err=True)
        return 0

    guard(body)


@solve.command()
@click.option("--root", required=True, type=click.Path(path_type=Path), help="Where saved runs are (searched down).")
@click.option("--max-depth", type=int, default=3, show_default=True, help="Directories below --root to search.")
@click.option("--status", type=click.Choice(["complete", "partial", "none"]), default=None, help="Only reports with this status.")
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON on stdout.")
def history(root: Path, max_depth: int, status: str | None, as_json: bool) -> None:
    """List saved diff-mode reports under --root: exit 0 when all read, 1 when some did not, 2 on bad input."""

    def body() -> int:
        from repo2rlenv.progress import Reporter
        from repo2rlenv.solver.history import read_history

        found = read_history(root, max_depth=max_depth, status=status)
        reporter = Reporter(quiet=as_json)
        reporter.table("reports", ["path", "created", "status", "solved", "recheck"],
                       [[r.path, r.created, r.status, f"{r.solved}/{r.functions}", r.recheck] for r in found.reports])
        for problem in found.problems:
            reporter.warn(f"problem: {problem}")
        if as_json:
            click.echo(found.model_dump_json(indent=2))
        return 0 if found.complete else 1

    guard(body)


@solve.command(name="run")
@click.argument("task_dir", required=False, type=click.Path(path_type=Path))
@click.option("--repo", type=click.Path(path_type=Path), default=None, help="Diff mode: the repository (a directory).")
@click.option("--diff", "diff_file", type=click.Path(path_type=Path), default=None, help="Diff mode: a unified diff file.")
@click.option("--git-base", default=None, help="Diff mode: test what changed since this git ref.")
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="Where trajectory, ledger and result go (task mode default: r2e-solve/<task>).")
@click.option("--patch", type=click.Path(path_type=Path), default=None, help="Diff mode: write the patch here (default: stdout).")
@click.option("--sandbox", "sandbox_choice", type=click.Choice(["auto", "docker", "local"]), default="auto",
              show_default=True, help="Diff mode: where the repository's tests run.")
@click.option("--base-image", default=None, help="Diff mode: base image of the Docker sandbox.")
@click.option("--max-functions", type=int, default=5, show_default=True, help="Diff mode: changed functions to solve.")
@click.option("--python", "python", default=None, metavar="PYTHON|VENV",
              help="Diff mode: build the local sandbox's venv from this interpreter (or a venv's); implies local.")
@click.option("--target", "targets", multiple=True, metavar="PATH.py::QUALNAME",
              help="Diff mode: solve this function (repeatable), changed or not; the diff is its context.")
@_model_options
def solve_run(task_dir: Path | None, repo: Path | None, diff_file: Path | None, git_base: str | None, out: Path | None,
          patch: Path | None, sandbox_choice: str, base_image: str | None, max_functions: int, python: str | None,
          targets: tuple[str, ...], config_file: Path | None, verbose: bool, as_json: bool, **flags: Any) -> None:
    """Write tests with the reference solver: for TASK_DIR (a Harbor task), or for what a diff changed.

    Saved diff-mode runs (--out): `solve recheck DIR`, `solve regression DIR --before REF --after REF`,
    `solve compare --before A --after B --out PAGE.html`, `solve history --root DIR`."""

    def body() -> int:
        if (task_dir is None) == (repo is None):
            raise SolverInputError("give either TASK_DIR (task mode) or --repo PATH with --diff/--git-base (diff mode)")
        if task_dir is not None:
            if diff_file or git_base or patch or targets or python:
                raise SolverInputError("--diff, --git-base, --patch, --target and --python belong to diff mode (--repo)")
            return _solve_task(task_dir, out, config_file, flags, verbose, as_json)
        if (diff_file is None) == (git_base is None):
            raise SolverInputError("diff mode needs exactly one of --diff FILE or --git-base REF")
        if max_functions < 1:
            raise SolverInputError("--max-functions must be at least 1")
        if python is not None:
            from repo2rlenv.solver.config import host_python

            if sandbox_choice == "docker":
                raise SolverInputError("--python runs the tests on this host: use it with --sandbox local or auto")
            python_path = host_python(python)
        else:
            python_path = None
        return _solve_diff(repo, diff_file, git_base, out, patch, sandbox_choice, base_image, max_functions,
                           list(targets), python_path, config_file, flags, verbose, as_json)

    guard(body)


@click.command(name="eval")
@click.argument("dataset", type=click.Path(path_type=Path))
@click.option("--out", type=click.Path(path_type=Path), default=None, help="Eval directory (default: DATASET/eval).")
@click.option("--task", "only", multiple=True, help="Only this task id (repeatable).")
@click.option("--restart", is_flag=True, help="Discard an earlier eval in --out instead of resuming it.")
@click.option("--tries", type=int, default=1, show_default=True,
              help="Solve every task this many times: each task's solve rate gives its measured difficulty.")
@_model_options
def eval_command(dataset: Path, out: Path | None, only: tuple[str, ...], restart: bool, tries: int,
                 config_file: Path | None, verbose: bool, as_json: bool, **flags: Any) -> None:
    """Run the solver on every task of DATASET and grade each with its verifier (resumable)."""

    def body() -> int:
        from repo2rlenv.eval.formatting import coverage_gain, finished_text, num, rate, reward_text, usd
        from repo2rlenv.eval.harness import EvalPaths, run_eval
        from repo2rlenv.progress import Reporter
        from repo2rlenv.sandbox.docker import docker_client

        from repo2rlenv.dataset.taskdir import DatasetPaths

        if tries < 1:
            raise SolverInputError("--tries must be at least 1")
        config = _config(config_file, flags)
        if not DatasetPaths(dataset).task_ids():
            raise SolverInputError(f"not a repo2rlenv dataset (no tasks/ with tasks): {dataset}")
        reporter = Reporter(quiet=as_json)
        checks = check_models(config, reporter)
        eval_dir = out or dataset / "eval"
        docker = docker_client()
        results = run_eval(dataset, eval_dir, config, docker=docker, restart=restart, only=list(only) or None,
                           hooks_for=lambda task_id: progress_hooks(reporter, prefix=f"[{task_id}] ", verbose=verbose),
                           progress=reporter.info, model_checks=checks, tries=tries)
        rows = [[r.run_id, reward_text(r), num(r.grade.cov if r.grade and not r.unfinished else None), r.outcome,
                 r.rounds, r.prompt_tokens + r.completion_tokens, usd(r.cost_usd, r.unpriced_calls)]
                for r in results.tasks]
        reporter.table("eval", ["task", "reward", "cov", "stop", "rounds", "tokens", "cost"], rows)
        t = results.totals
        reporter.info(f"solve rate {rate(t.solve_rate)} ({finished_text(t)}), "
                      f"mean reward {num(t.mean_reward)}, "
                      f"mean coverage gain {coverage_gain(t.mean_coverage_gain, t.coverage_tasks)}, "
                      + (f"mean mutation score {num(t.mean_mutation_score)}, " if t.mean_mutation_score is not None else "")
                      + f"cost {usd(t.cost_usd, t.unpriced_calls)}")
        if tries > 1:
            reporter.table("difficulty", ["task", "solved", "measured", "predicted"],
                           [[d.task_id, f"{d.solved}/{d.tries}", d.measured_label or "–", d.predicted_label or "–"]
                            for d in results.difficulty])
        if t.unfinished or results.not_run:
            reporter.warn(f"{t.unfinished} task(s) unfinished and {len(results.not_run)} not run: rerun the same "
                          "command to resume them")
        paths = EvalPaths(eval_dir)
        reporter.info(f"wrote {paths.results_json}, {paths.results_md.name} and {paths.report_html.name}")
        if as_json:
            click.echo(json.dumps(results.model_dump(mode="json"), indent=2))
        return 0 if t.graded and not (t.unfinished or results.not_run) else 1

    guard(body)


COMMANDS = [solve, eval_command]

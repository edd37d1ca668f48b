"""Diff mode: write tests for the functions a diff changed, and output a patch that only adds test files.

TestPilot's original use. The functions are those of the diff's changed Python files (outside tests/)
whose lines the diff touched; each is solved in a fresh sandbox session of the repository as it is now
(the new side of the diff). Written files are confined to new `tests/**/test_*.py` files; the patch holds
the files of the solves that passed, as `git apply`-able new-file diffs.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any, Callable, Protocol

from pydantic import BaseModel, ConfigDict, Field

from repo2rlenv.pysource.functions import FunctionRecord, extract_functions, module_name_for
from repo2rlenv.pysource.sections import truncate
from repo2rlenv.sandbox.base import Sandbox, Session
from repo2rlenv.sandbox.install import detect_import_roots
from repo2rlenv.solver.diffscan import parse_diff
from repo2rlenv.solver.edits import NewTestFiles, PathPolicy
from repo2rlenv.solver.errors import SolverInputError
from repo2rlenv.solver.result import SolveResult
from repo2rlenv.solver.target import Target, is_test_file

class SolvesOne(Protocol):
    """What a diff solve needs of a solver (`loop.Solver`, which imports this module for
    `Solver.solve_function`: a protocol here keeps the two from importing each other)."""

    def solve(self, task_text: str, target: Target, session: Session, policy: PathPolicy, *,
              store: Any = None, session_id: str | None = None) -> SolveResult: ...


MAX_DIFF_CHARS = 4000
# Copied into the sandbox's build context: never version control, caches or virtualenvs.
_IGNORED = shutil.ignore_patterns(".git", "__pycache__", "*.pyc", ".venv", "venv", "*.egg-info", ".tox",
                                  ".nox", ".pytest_cache", ".mypy_cache", "node_modules", "build", "dist")


class ChangedFunction(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    target: Target
    diff: str = Field(description="The diff of the function's file.")


class FunctionSolve(BaseModel):
    model_config = ConfigDict(extra="forbid")

    target: Target
    solve: SolveResult
    in_patch: bool = Field(description="Whether the patch carries this solve's files.")


class DiffSolve(BaseModel):
    """Every changed function's solve and the patch of the passing ones."""

    model_config = ConfigDict(extra="forbid")

    functions: list[FunctionSolve] = Field(default_factory=list)
    skipped: list[str] = Field(default_factory=list, description="Changed functions not attempted, and why.")
    patch: str = Field("", description="New-file diffs of the files the passing solves wrote.")


def diff_from_git(repo: Path, base: str) -> str:
    """`git diff BASE` of the working tree (committed and uncommitted changes since BASE)."""
    proc = subprocess.run(["git", "diff", "--no-color", "--no-ext-diff", base, "--"], cwd=repo,
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SolverInputError(f"git diff {base} failed in {repo}: {proc.stderr.strip().splitlines()[-1:] or ['?']}")
    return proc.stdout


def _test_name(record: FunctionRecord, taken: set[str]) -> str:
    stem = re.sub(r"[^0-9a-zA-Z_]+", "_", f"{record.module.rsplit('.', 1)[-1]}_{record.qualname}").strip("_").lower()
    path, n = f"tests/test_r2e_{stem}.py", 2
    while path in taken:
        path, n = f"tests/test_r2e_{stem}_{n}.py", n + 1
    taken.add(path)
    return path


def _target_of(repo: Path, record: FunctionRecord, path: str, module: str, roots: list[str],
               taken: set[str]) -> Target:
    root = next((r for r in roots if path.startswith(f"{r}/") or not r), "")
    return Target(path=path, qualname=record.qualname, module=module, test_path=_test_name(record, taken),
                  import_roots=[root])


def chosen_functions(repo: Path, diff: str, specs: list[str]) -> list[ChangedFunction]:
    """The functions named by `--target path.py::qualname`, in the order given, changed by the diff or not.
    Each is shown its file's part of the diff, or the whole diff (cut) when its file did not change: the
    change is context for what to test. A spec that names no function is one `SolverInputError` line."""
    roots = detect_import_roots(repo)
    taken = {p.relative_to(repo).as_posix() for p in repo.rglob("*.py")}
    by_path = {change.path: change for change in parse_diff(diff)}
    found: list[ChangedFunction] = []
    for spec in dict.fromkeys(specs):
        path, sep, qualname = spec.partition("::")
        if not sep or not path.endswith(".py") or not qualname:
            raise SolverInputError(f"--target must be path.py::qualname (e.g. src/pkg/mod.py::Cls.method), got {spec!r}")
        path = Path(path).as_posix().removeprefix("./")
        file = repo / path
        if not file.is_file() or not file.resolve().is_relative_to(repo.resolve()):
            raise SolverInputError(f"--target {spec}: no file {path} in {repo}")
        module = module_name_for(path, roots)
        if module is None:
            raise SolverInputError(f"--target {spec}: {path} is not an importable module of the repository")
        try:
            records = extract_functions(file.read_text(encoding="utf-8"), path, module)
        except SyntaxError as exc:
            raise SolverInputError(f"--target {spec}: {path} does not parse (line {exc.lineno})") from exc
        record = next((r for r in records if r.qualname == qualname), None)
        if record is None:
            raise SolverInputError(f"--target {spec}: {path} has no function {qualname}")
        context = by_path[path].text if path in by_path else diff
        found.append(ChangedFunction(target=_target_of(repo, record, path, module, roots, taken),
                                     diff=truncate(context, MAX_DIFF_CHARS)))
    return found


def changed_functions(repo: Path, diff: str) -> tuple[list[ChangedFunction], list[str]]:
    """The functions whose lines the diff touched, with a fresh test path each; and what was skipped."""
    roots = detect_import_roots(repo)
    taken = {p.relative_to(repo).as_posix() for p in repo.rglob("*.py")}
    found: list[ChangedFunction] = []
    skipped: list[str] = []
    for change in parse_diff(diff):
        if change.deleted or not change.path.endswith(".py") or change.path.split("/")[0] in ("tests", "test"):
            continue
        path = repo / change.path
        module = module_name_for(change.path, roots)
        if module is None or not path.is_file():
            skipped.append(f"{change.path}: not an importable module of the repository")
            continue
        try:
            records = extract_functions(path.read_text(encoding="utf-8"), change.path, module)
        except SyntaxError:
            skipped.append(f"{change.path}: does not parse")
            continue
        touched = set(change.lines)
        for record in records:
            if touched & set(range(record.lineno - len(record.decorators), record.end_lineno + 1)):
                found.append(ChangedFunction(target=_target_of(repo, record, change.path, module, roots, taken),
                                             diff=truncate(change.text, MAX_DIFF_CHARS)))
    return found, skipped


def task_text(change: ChangedFunction) -> str:
    template = Template(resources.files(__package__).joinpath("templates", "diff_task.md").read_text(encoding="utf-8"))
    return template.substitute(qualname=change.target.qualname, path=change.target.path,
                               diff=change.diff.strip("\n"), test_path=change.target.test_path).strip()


def new_file_patch(files: dict[str, str]) -> str:
    """`git apply`-able diffs creating each file."""
    out = []
    for path, text in sorted(files.items()):
        lines = text.splitlines(keepends=True)
        out.append(f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
                   f"@@ -0,0 +1,{len(lines)} @@\n")
        for line in lines:
            out.append("+" + line if line.endswith("\n") else f"+{line}\n\\ No newline at end of file\n")
    return "".join(out)


def solve_diff(repo: Path, diff: str, sandbox: Sandbox, make_solver: Callable[[Target], SolvesOne], *,
               max_functions: int, targets: list[str] | None = None,
               progress: Callable[[str], None] | None = None) -> DiffSolve:
    """Solve every changed function (up to `max_functions`) — or the functions `targets` names — in its own
    session of `sandbox`, with the solver `make_solver` gives for it (one trajectory per function)."""
    say = progress or (lambda _m: None)
    if not repo.is_dir():
        raise SolverInputError(f"--repo must be a directory: {repo}")
    if targets:
        changes, skipped = chosen_functions(repo, diff, targets), []
    else:
        changes, skipped = changed_functions(repo, diff)
    if not changes:
        raise SolverInputError("the diff changes no function of the repository's package source "
                               "(name functions to test with --target path.py::qualname)")
    result = DiffSolve(skipped=skipped + [f"{c.target.key}: over --max-functions"
                                          for c in changes[max_functions:]])
    existing = [p.relative_to(repo).as_posix() for p in repo.glob("tests/**/*") if p.is_file()]
    with tempfile.TemporaryDirectory(prefix="r2e-solve-") as tmp:
        snapshot = Path(tmp) / "repo"
        shutil.copytree(repo, snapshot, ignore=_IGNORED, symlinks=True)
        say("preparing the sandbox")
        sandbox.prepare(snapshot)
        for change in changes[:max_functions]:
            say(f"solving {change.target.key}")
            session = sandbox.open()
            try:
                solver = make_solver(change.target)
                solve = solver.solve(task_text(change), change.target, session, NewTestFiles(existing))
            finally:
                session.close()
            result.functions.append(FunctionSolve(target=change.target, solve=solve, in_patch=solve.solved))
    passing = {p: t for f in result.functions if f.in_patch for p, t in f.solve.files.items() if is_test_file(p)}
    result.patch = new_file_patch(passing)
    return result

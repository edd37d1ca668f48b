"""Measure repo2rlenv on a list of real repositories as a new user would run it (issue 14's benchmark).

    python3 scripts/corpus_check.py LIST --out DIR [--timeout-per-repo S] [--mirror ROOT] [--only NAME ...]

LIST holds one repository a line (owner/name, a git URL or a local path; `#` starts a comment). For each,
the script runs `repo2rlenv doctor` and then
`repo2rlenv generate --pipeline-opt strategy=mutation --pipeline-opt limit=3 --sandbox docker` — no model
and no per-repo flag; its `time_budget_min` is what doctor left of the repo's limit — and writes DIR/corpus.md and DIR/corpus.json: repo, build backend, the stage
reached, tests, candidates, survivors, emitted and validated tasks, and the cause when a run stopped.
Every command's output is kept under DIR/repos/<slug>/. A repo whose result.json exists is not run again
(delete it to rerun), so an interrupted measurement resumes. `--mirror ROOT` maps owner/name to
ROOT/owner+name/repo when that git directory exists (machines without access to GitHub).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from pydantic import BaseModel, ConfigDict

ROOT = Path(__file__).resolve().parent.parent
GENERATE_OPTS = ["--pipeline-opt", "strategy=mutation", "--pipeline-opt", "limit=3", "--sandbox", "docker"]
TARGET_TASKS = 3
# The last stage a run got through, in pipeline order; `error: STAGE: cause` names where it stopped.
STAGES = ["source", "environment", "baseline", "mining", "gates", "synthesis", "emit", "validate", "done"]
_ERROR_LINE = re.compile(r"^error: (?:(?P<stage>[a-z]+): )?(?P<cause>.*)$")
_GRACE_SEC = 30
BUDGET_MARGIN_SEC = 90  # a stopping run still writes its tasks' summary and validates what it emitted


class RepoEntry(BaseModel):
    """One line of the list: what to pass as --repo, and the name shown in the table."""

    model_config = ConfigDict(extra="forbid")

    name: str
    spec: str
    comment: str = ""


class CorpusRow(BaseModel):
    """One repository's measurement."""

    model_config = ConfigDict(extra="forbid")

    repo: str
    backend: str = "?"
    stage: str = "?"
    tests: int | None = None
    candidates: int | None = None
    survived: int | None = None
    emitted: int = 0
    validated: int = 0
    cause: str = ""
    seconds: float = 0.0
    limit: float | None = None  # the run's time limit (a --rerender reads the causes with it)

    @property
    def ok(self) -> bool:
        return self.validated >= TARGET_TASKS


COLUMNS = ["repo", "backend", "stage reached", "tests", "candidates", "survived", "emitted", "validated", "cause"]


def parse_list(text: str, mirror: Path | None = None) -> list[RepoEntry]:
    """The entries of a list file; owner/name becomes a mirror's git dir when one exists (cloned into a
    checkout by `checkout` before use)."""
    entries = []
    for raw in text.splitlines():
        line, _, comment = raw.partition("#")
        line = line.strip()
        if not line:
            continue
        spec = line
        if mirror is not None and re.fullmatch(r"[\w.-]+/[\w.-]+", line):
            local = mirror / line.replace("/", "+") / "repo"
            if local.is_dir():
                spec = str(local)
        entries.append(RepoEntry(name=line, spec=spec, comment=comment.strip()))
    return entries


def checkout(entry: RepoEntry, root: Path) -> RepoEntry:
    """A mirror (a bare clone) becomes a normal checkout at ROOT/owner/name, as a user would have it: task
    ids then read owner__name, and git tools that expect a work tree work."""
    source = Path(entry.spec)
    if entry.spec == entry.name or not (source / "HEAD").is_file():
        return entry
    dest = root / entry.name
    if not (dest / ".git").is_dir():
        dest.parent.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(["git", "clone", "-q", str(source), str(dest)], capture_output=True, text=True)
        if done.returncode != 0:
            # A clone whose checkout failed leaves a .git behind: gone, so no later run measures a half tree.
            shutil.rmtree(dest, ignore_errors=True)
            said = [line for line in done.stderr.splitlines() if line.strip()]
            raise CheckoutFailed(f"git clone of {source} failed: {said[0] if said else done.returncode}")
    return entry.model_copy(update={"spec": str(dest)})


class CheckoutFailed(Exception):
    """The list's repository could not be checked out (a mirror missing a file's contents, say)."""


def slug(name: str) -> str:
    return re.sub(r"[^\w.-]+", "+", name.strip("/")).strip("+")


def _cell(value: object) -> str:
    text = "–" if value is None else str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(rows: list[CorpusRow], command: str = "") -> str:
    """The table, with the share of repos that reached the target first."""
    ok = sum(r.ok for r in rows)
    share = f"{ok}/{len(rows)} ({ok / len(rows):.0%})" if rows else "0/0"
    lines = [f"# Corpus: {share} repos emit ≥ {TARGET_TASKS} validated tasks", ""]
    if command:
        lines += [f"Command: `{command}`", ""]
    lines += ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in rows:
        cells = [r.repo, r.backend, r.stage, r.tests, r.candidates, r.survived, r.emitted, r.validated, r.cause]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"


def write_outputs(out: Path, rows: list[CorpusRow], command: str = "") -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "corpus.json").write_text(json.dumps([r.model_dump() for r in rows], indent=1) + "\n")
    (out / "corpus.md").write_text(render_markdown(rows, command))


# --- running one repo -----------------------------------------------------------------------------------


class Run(BaseModel):
    """One CLI invocation's outcome."""

    code: int | None  # None: killed at the time limit
    stdout: str
    stderr: str
    seconds: float


def run_cli(args: list[str], log: Path, timeout: float) -> Run:
    """`python -m repo2rlenv ARGS` with a time limit. On the limit it gets SIGINT first, so its sandbox
    sessions close (containers removed), and SIGKILL after a grace period."""
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "repo2rlenv", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=max(1.0, timeout))
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=_GRACE_SEC)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
        code = None
    seconds = time.monotonic() - start
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(f"$ repo2rlenv {' '.join(args)}\n# exit {code} after {seconds:.0f}s\n"
                   f"--- stdout\n{out}\n--- stderr\n{err}\n")
    return Run(code=code, stdout=out or "", stderr=err or "", seconds=seconds)


def error_line(stderr: str) -> tuple[str | None, str]:
    """(stage, cause) from the last `error:` line of a run's stderr; (None, last line) when there is none."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    for line in reversed(lines):
        match = _ERROR_LINE.match(line)
        if match:
            stage = match["stage"] if match["stage"] in STAGES else None
            cause = match["cause"] if stage else line[len("error: "):]
            return stage, cause
    return None, lines[-1] if lines else ""


def _json_tail(stdout: str) -> dict | None:
    start = stdout.find("{")
    if start < 0:
        return None
    try:
        return json.loads(stdout[start:])
    except json.JSONDecodeError:
        return None


def backend_of(spec: str) -> str:
    """The build backend named by a checkout's pyproject.toml (a fallback when doctor reports none)."""
    import tomllib

    path = Path(spec)
    if not (path / "pyproject.toml").is_file():
        return "setuptools (setup.py)" if (path / "setup.py").is_file() else "?"
    try:
        system = tomllib.loads((path / "pyproject.toml").read_text()).get("build-system", {})
    except tomllib.TOMLDecodeError:
        return "?"
    return system.get("build-backend") or "setuptools (legacy)"


def budget_opts(left_sec: float) -> list[str]:
    """generate's own time budget: what doctor left of the repo's limit, less a margin for the stop itself
    (the run then stops with what it made and says why, rather than being killed with nothing said)."""
    minutes = max(1.0, (left_sec - BUDGET_MARGIN_SEC) / 60)
    return ["--pipeline-opt", f"time_budget_min={minutes:.1f}"]


def measure(entry: RepoEntry, repo_dir: Path, timeout: float) -> CorpusRow:
    """doctor, then a small generate, within `timeout` seconds in all; the row is read from their logs."""
    deadline = time.monotonic() + timeout
    doctor = run_cli(["doctor", "--repo", entry.spec, "--sandbox", "docker", "--out", str(repo_dir / "doctor"),
                      "--json"], repo_dir / "doctor.log", deadline - time.monotonic())
    refused = doctor.code == 2 and "No such command" not in doctor.stderr  # bad input: generate would say the same
    if doctor.code is not None and not refused:
        left = deadline - time.monotonic()
        run_cli(["generate", "--repo", entry.spec, "--out", str(repo_dir / "out"), *GENERATE_OPTS,
                 *budget_opts(left), "--json"], repo_dir / "generate.log", left)
    return read_row(entry, repo_dir, timeout)


def read_log(path: Path) -> Run | None:
    """A log `run_cli` wrote, back as a Run (None when the command never ran)."""
    try:
        text = path.read_text()
    except OSError:
        return None
    match = re.search(r"^# exit (\S+) after (\d+)s\n--- stdout\n(.*)\n--- stderr\n(.*)\n\Z", text, re.S | re.M)
    if match is None:
        return None
    code = None if match[1] == "None" else int(match[1])
    return Run(code=code, seconds=float(match[2]), stdout=match[3], stderr=match[4])


def read_row(entry: RepoEntry, repo_dir: Path, timeout: float) -> CorpusRow:
    """One repo's row from doctor.log, generate.log and the generate output under repo_dir."""
    row = CorpusRow(repo=entry.name, backend=backend_of(entry.spec), limit=timeout)
    doctor, gen = read_log(repo_dir / "doctor.log"), read_log(repo_dir / "generate.log")
    report = (_json_tail(doctor.stdout) if doctor else None) or {}
    if report:
        row.backend = report.get("backend") or row.backend
        row.tests = report.get("tests")
        row.stage = report.get("stage_reached", row.stage)
    seconds = (doctor.seconds if doctor else 0.0) + (gen.seconds if gen else 0.0)
    if doctor is not None and doctor.code is None:
        row.cause = f"doctor: over the {timeout:.0f}s limit"
        return _finish(row, seconds)
    if gen is None:
        stage, cause = error_line(doctor.stderr) if doctor else (None, "not run")
        row.stage, row.cause = stage or "source", cause
        return _finish(row, seconds)
    gen_out = repo_dir / "out"
    summary = _json_tail(gen.stdout) or _read_json(gen_out / "summary.json") or {}
    stages = summary.get("stages", {})
    baseline = summary.get("baseline") or {}
    row.tests = baseline.get("tests", row.tests)
    row.candidates = stages.get("candidates")
    row.survived = stages.get("survived gates")
    row.emitted = len(summary.get("emitted", []))
    row.validated = _validated(gen_out, summary)
    if not summary and (gen_out / "tasks").is_dir():
        # Stopped at the time limit: no summary, but published tasks are complete (atomic renames).
        row.emitted = sum(p.is_dir() and not p.name.startswith(".") for p in (gen_out / "tasks").iterdir())
        row.validated = len(list((gen_out / "validation").glob("*.json")))
    advice = summary.get("advice") if isinstance(summary.get("advice"), dict) else {}
    if gen.code is None:
        row.stage = _stage_from_summary(summary) if summary else row.stage
        row.cause = f"over the {timeout:.0f}s limit{_decided_so_far(gen_out)}"
    elif gen.code == 0:
        row.stage = "done"
        row.cause = advice.get("line", "") if row.validated < TARGET_TASKS else ""
    else:
        stage, cause = error_line(gen.stderr)
        row.stage = stage or (_stage_from_summary(summary) if summary else "error")
        row.cause = advice.get("line", cause) if summary else cause
    if row.stage != "done":
        # doctor's narrower lines (a file that fails to collect and why) say more than generate's one line.
        extra = [f"{p['stage']}: {p['line']}" for p in report.get("problems", [])
                 if p.get("kind") in ("collection_errors", "failing_at_ref", "needs_network")]
        if extra:
            row.cause = "; ".join([row.cause, *extra[:2]])
    return _finish(row, seconds)


def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None


def _validated(out: Path, summary: dict) -> int:
    """Emitted tasks whose validation record says oracle 1.0 and empty 0.0."""
    count = 0
    for task_id in summary.get("emitted", []):
        # `repo2rlenv.dataset.manifest.validation_path`: written only when the task's validation passed.
        if _read_json(out / "validation" / f"{task_id}.json") is not None:
            count += 1
    return count


def _decided_so_far(out: Path) -> str:
    """What the journal of a run stopped at the limit had decided: ' after N candidates (reason: n, …)'."""
    reasons: Counter[str] = Counter()
    for journal in out.glob(".r2e-state/*.jsonl"):
        for line in journal.read_text().splitlines():
            try:
                reasons[json.loads(line).get("skip_reason") or "emitted"] += 1
            except json.JSONDecodeError:
                continue  # the line being written when the run was stopped
    if not reasons:
        return ""
    top = ", ".join(f"{k}: {v}" for k, v in reasons.most_common(3))
    return f" after {sum(reasons.values())} candidates decided ({top})"


def _stage_from_summary(summary: dict) -> str:
    stages = summary.get("stages", {})
    if summary.get("emitted"):
        return "emit"
    if stages.get("survived gates"):
        return "synthesis"
    if stages.get("gated"):
        return "gates"
    if "candidates" in stages:
        return "mining"
    return "baseline"


def _finish(row: CorpusRow, seconds: float) -> CorpusRow:
    row.seconds = round(seconds, 1)
    row.cause = row.cause[:400]
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("list", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--timeout-per-repo", type=float, default=900.0)
    parser.add_argument("--mirror", type=Path, default=None)
    parser.add_argument("--only", nargs="*", default=None, help="Measure only these names of the list.")
    parser.add_argument("--rerender", action="store_true",
                        help="Rebuild every row from the logs already under --out, running nothing.")
    args = parser.parse_args(argv)
    if not args.list.is_file():
        print(f"error: list not found: {args.list}", file=sys.stderr)
        return 2
    entries = parse_list(args.list.read_text(), args.mirror)
    if args.only:
        entries = [e for e in entries if e.name in args.only]
    command = "python3 scripts/corpus_check.py " + " ".join(argv if argv is not None else sys.argv[1:])
    rows: list[CorpusRow] = []
    for entry in entries:
        repo_dir = args.out / "repos" / slug(entry.name)
        done = repo_dir / "result.json"
        if args.rerender:
            if repo_dir.is_dir():
                kept = _read_json(done) or {}
                limit = kept.get("limit") or args.timeout_per_repo  # the limit the logs were made under
                row = read_row(checkout(entry, args.out / "checkouts"), repo_dir, limit)
                done.write_text(row.model_dump_json(indent=1))
                rows.append(row)
            continue
        if done.is_file():
            rows.append(CorpusRow.model_validate_json(done.read_text()))
            continue
        print(f"» {entry.name}", file=sys.stderr, flush=True)
        repo_dir.mkdir(parents=True, exist_ok=True)
        try:
            entry = checkout(entry, args.out / "checkouts")
        except CheckoutFailed as exc:
            row = CorpusRow(repo=entry.name, stage="source", cause=str(exc)[:500])
        else:
            row = measure(entry, repo_dir, args.timeout_per_repo)
        done.write_text(row.model_dump_json(indent=1))
        print(f"  {row.stage}: tests={row.tests} emitted={row.emitted} validated={row.validated} {row.cause}",
              file=sys.stderr, flush=True)
        rows.append(row)
        write_outputs(args.out, rows, command)
    write_outputs(args.out, rows, command)
    print(render_markdown(rows, command))
    return 0


if __name__ == "__main__":
    sys.exit(main())

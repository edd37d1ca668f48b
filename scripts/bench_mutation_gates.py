#!/usr/bin/env python3
"""Benchmark of mutant gating (issue 3, item 6): our batch worker against mutmut 3 and the naive way.

On one checked-out repository, one after the other in this process tree:
  (a) ours: baseline + mining + `BatchGateRunner` over N sampled mutants, in a warm Docker container
      without network;
  (b) `mutmut run` (mutmut 3) on a temporary copy of the repo, configured through its pyproject/setup.cfg;
  (c) naive: a fresh container per mutant running the whole suite, over a small sample;
  (d) optionally `GateRunner` (a pytest subprocess per mutant) on the same mutants, to check verdicts.
Prints mutants/s of each and the ratios ours/mutmut and ours/naive, the repo's mutants per operator, the
sample's outcomes per gate, and survivors with their diffs. The numbers are what they are: the machine's
load average is printed beside each phase because other work on the machine moves them.

    python scripts/bench_mutation_gates.py --repo /path/to/cachetools
"""

from __future__ import annotations

import argparse
import io
import os
import random
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter
from pathlib import Path

from repo2rlenv.baseline.runner import SuiteRunner, run_baseline
from repo2rlenv.pipelines.test_synthesis.candidates import Candidate
from repo2rlenv.pipelines.test_synthesis.gate.batch import BatchGateRunner
from repo2rlenv.pipelines.test_synthesis.gate.gates import GateRunner
from repo2rlenv.pipelines.test_synthesis.mine.mutation import mine_mutations
from repo2rlenv.pipelines.test_synthesis.options import TestSynthesisOptions
from repo2rlenv.sandbox.base import Limits, base_env
from repo2rlenv.sandbox.docker import WORKSPACE, DockerSandbox

# mutmut's progress line: done/total then the count per status emoji.
_MUTMUT_STATUS = {"🎉": "killed", "🫥": "no tests", "⏰": "timeout", "🤔": "suspicious", "🙁": "survived",
                  "🔇": "skipped", "🧙": "caught by type check"}
_MUTMUT_LINE = re.compile(r"(\d+)/(\d+)\s+" + r"\s+".join(rf"{e}\s*(\d+)" for e in _MUTMUT_STATUS))


def say(text: str = "") -> None:
    print(text, flush=True)


def load() -> str:
    return "load average " + " ".join(f"{x:.1f}" for x in os.getloadavg())


def outcome(cand: Candidate) -> str:
    if cand.status == "dropped":
        return cand.skip_reason or "dropped"
    # Killed mutants are kept and flagged by the gates; the pipeline drops them when require_surviving.
    return "killed" if cand.killed else "survived"


def verdict(cand: Candidate) -> tuple:
    return cand.status, cand.killed, cand.skip_reason


def table(title: str, rows: list[tuple], header: tuple) -> None:
    say(f"\n{title}")
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        say("  " + "  ".join(str(v).ljust(w) for v, w in zip(row, widths)))


# --- (a) ours -----------------------------------------------------------------------------------------


def run_ours(args, sandbox: DockerSandbox, repo: Path):
    """Baseline, mining and the first gating run; the session stays open for the second run and (d)."""
    say(f"\n== (a) ours: BatchGateRunner in Docker (network none, cpus={args.cpus}, workers={args.workers}) "
        f"[{load()}]")
    session = sandbox.open()
    runner = SuiteRunner(session, sandbox.plan.import_roots)
    start = time.monotonic()
    baseline = run_baseline(runner, reruns=0, timeout=1800)
    t_baseline = time.monotonic() - start
    start = time.monotonic()
    options = TestSynthesisOptions(strategy="mutation", seed=args.seed)
    candidates, _, functions = mine_mutations(repo, baseline, options, sandbox.plan.import_roots)
    t_mine = time.monotonic() - start
    sample, gates, t_gate = gate_once(args, runner, baseline, candidates)
    say(f"baseline {t_baseline:.1f}s ({len(baseline.stable_passing)} stable tests), mining {t_mine:.1f}s "
        f"({len(functions)} functions, {len(candidates)} mutants)")
    return session, runner, baseline, candidates, sample, gates, (t_baseline, t_mine, t_gate)


def gate_once(args, runner: SuiteRunner, baseline, candidates: list[Candidate]):
    sample = [c.model_copy(deep=True) for c in candidates[:args.mutants]]
    gates = BatchGateRunner(runner, baseline, timeout=args.timeout, workers=args.workers)
    start = time.monotonic()
    gates.check_many(sample)
    elapsed = time.monotonic() - start
    say(f"gating {len(sample)} mutants: {elapsed:.1f}s = {len(sample) / elapsed:.2f} mutants/s "
        f"(worker warm-up {gates.last_summary.get('warmup_sec', '?')}s) [{load()}]")
    return sample, gates, elapsed


def report_ours(candidates: list[Candidate], sample: list[Candidate], gates: BatchGateRunner) -> None:
    per_op = Counter(c.operator for c in candidates)
    table(f"mutants per operator (all {len(candidates)} mined)", sorted(per_op.items()), ("operator", "mutants"))
    outcomes = Counter(outcome(c) for c in sample)
    table(f"gate outcome ({len(sample)} gated)", sorted(outcomes.items()), ("outcome", "mutants"))
    by_op: dict[str, Counter] = {}
    for cand in sample:
        by_op.setdefault(cand.operator or "?", Counter())[outcome(cand)] += 1
    names = sorted(outcomes)
    table("gate outcome per operator", [(op, *(c[n] for n in names)) for op, c in sorted(by_op.items())],
          ("operator", *names))
    modes = Counter(r.mode or r.status.value for r in gates.results.values())
    fallback = sum(1 for c in sample if c.candidate_id not in gates.results or
                   gates.results[c.candidate_id].status.value == "error")
    table("how the worker put each mutant in", sorted(modes.items()) + [("re-run by GateRunner", fallback)],
          ("path", "mutants"))
    spent: dict[tuple[str, str], list[float]] = {}
    for r in gates.results.values():
        spent.setdefault((r.mode or "-", r.status.value), []).append(r.duration)
    table("seconds per mutant in a worker child, by path and verdict",
          [(mode, status, len(d), f"{sum(d) / len(d):.3f}", f"{sum(d):.1f}") for (mode, status), d in sorted(spent.items())],
          ("path", "verdict", "mutants", "mean s", "total s"))
    timeouts = [r.duration for r in gates.results.values() if r.status.value == "timeout"]
    say(f"  {len(timeouts)} timed out, holding a worker slot {sum(timeouts):.0f}s in all "
        f"(of the wall clock: about that divided by the workers)")
    survivors = [c for c in sample if c.status == "kept" and not c.killed]
    picked, seen = [], set()
    for cand in survivors:  # one per function first, so the spot check is varied
        if cand.function.qualname not in seen:
            picked.append(cand)
            seen.add(cand.function.qualname)
    picked = (picked + [c for c in survivors if c not in picked])[:5]
    say(f"\n{len(survivors)} of {len(sample)} survive; spot check of {len(picked)}:")
    for cand in picked:
        say(f"\n--- {cand.function.path}::{cand.function.qualname} [{cand.operator}] "
            f"line {cand.line}, {len(cand.line_tests)} covering tests ran on B, none noticed")
        say(cand.diff.rstrip())


# --- (b) mutmut ---------------------------------------------------------------------------------------


def configure_mutmut(copy: Path, source_paths: list[str]) -> None:
    paths = ", ".join(f'"{p}"' for p in source_paths)
    pyproject = copy / "pyproject.toml"
    if pyproject.is_file() and "[tool.mutmut]" not in pyproject.read_text():
        pyproject.write_text(pyproject.read_text().rstrip() + f"\n\n[tool.mutmut]\nsource_paths = [{paths}]\n")
    elif not pyproject.is_file():
        cfg = copy / "setup.cfg"
        text = cfg.read_text() if cfg.is_file() else ""
        cfg.write_text(text + "\n[mutmut]\nsource_paths=" + ",".join(source_paths) + "\n")


def run_mutmut(args, repo: Path, source_paths: list[str]) -> tuple[float, dict[str, int], str]:
    say(f"\n== (b) mutmut run --max-children {args.mutmut_children} (host, no sandbox) [{load()}]")
    with tempfile.TemporaryDirectory(prefix="r2e-bench-mutmut-") as tmp:
        copy = Path(tmp) / repo.name
        shutil.copytree(repo, copy, ignore=shutil.ignore_patterns(".git", "mutants", "__pycache__"))
        configure_mutmut(copy, source_paths)
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
        start = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "mutmut", "run", "--max-children", str(args.mutmut_children)],
                              cwd=copy, env=env, capture_output=True, text=True, timeout=args.mutmut_timeout)
        wall = time.monotonic() - start
    out = proc.stdout + proc.stderr
    matches = _MUTMUT_LINE.findall(out)
    own_rate = re.findall(r"([\d.]+) mutations/second", out)
    if proc.returncode != 0 or not matches:
        say(f"mutmut failed (exit {proc.returncode}): {out.strip()[-800:]}")
        return wall, {}, ""
    last = matches[-1]
    counts = {"done": int(last[0]), "total": int(last[1])}
    counts.update({name: int(n) for name, n in zip(_MUTMUT_STATUS.values(), last[2:])})
    return wall, counts, own_rate[-1] if own_rate else "?"


# --- (c) naive ----------------------------------------------------------------------------------------


def run_naive(args, sandbox: DockerSandbox, sample: list[Candidate]) -> tuple[float, list[tuple[Candidate, str]]]:
    say(f"\n== (c) naive: a fresh container per mutant running the whole suite, {len(sample)} mutants [{load()}]")
    client = sandbox._client  # the sandbox's own connection; nothing here needs another
    limits = sandbox.limits
    env = base_env("/tmp", "/tmp", "/opt/venv/bin:/usr/local/bin:/usr/bin:/bin")
    argv = ["timeout", "-k", "2", str(args.timeout), "/opt/venv/bin/python", "-m", "pytest", "-q",
            "-p", "no:cacheprovider", "--no-header"]
    verdicts = []
    start = time.monotonic()
    for cand in sample:
        container = client.containers.create(
            sandbox.image, argv, network_mode="none", working_dir=WORKSPACE, environment=env,
            mem_limit=f"{limits.memory_mb}m", nano_cpus=int(limits.cpus * 1e9), pids_limit=limits.pids)
        try:
            buf = io.BytesIO()
            with tarfile.open(fileobj=buf, mode="w") as tar:
                for rel, text in cand.files_b.items():
                    data = text.encode()
                    info = tarfile.TarInfo(f"{WORKSPACE.lstrip('/')}/{rel}")
                    info.size, info.mtime, info.mode = len(data), int(time.time()), 0o644
                    tar.addfile(info, io.BytesIO(data))
            container.put_archive("/", buf.getvalue())
            container.start()
            code = container.wait(timeout=args.timeout + 30)["StatusCode"]
        finally:
            container.remove(force=True)
        verdicts.append((cand, "survived" if code == 0 else "killed"))
    return time.monotonic() - start, verdicts


# --- main -----------------------------------------------------------------------------------------------


def check_against_subprocess(args, runner: SuiteRunner, baseline, candidates: list[Candidate],
                             sample: list[Candidate], gates: BatchGateRunner) -> None:
    """(d): GateRunner on the first mutants of the sample; every verdict that differs is listed."""
    say(f"\n== (d) GateRunner, a pytest subprocess per mutant, on {args.subprocess} of the same mutants "
        f"[{load()}]")
    slow = GateRunner(runner, baseline, timeout=args.timeout)
    checked = [c.model_copy(deep=True) for c in candidates[:args.subprocess]]
    start = time.monotonic()
    for cand in checked:
        slow.check(cand)
    t_slow = time.monotonic() - start
    differ = [(a, b) for a, b in zip(sample, checked) if verdict(a) != verdict(b)]
    say(f"GateRunner: {len(checked)} mutants in {t_slow:.1f}s = {len(checked) / t_slow:.2f} mutants/s; "
        f"verdicts differing from the worker's: {len(differ)}")
    # A subprocess timeout can be the subprocess's own slowness (pytest formats every failure's
    # traceback); re-run those with a longer clock to tell that from a real difference.
    patient = GateRunner(runner, baseline, timeout=args.timeout * 6)
    for a, b in differ:
        result = gates.results.get(a.candidate_id)
        line = (f"  {a.function.qualname} [{a.operator}] worker {verdict(a)} "
                f"({result.mode if result else '-'}, {len(result.failing) if result else 0} failing, "
                f"{result.duration if result else 0:.2f}s); subprocess {verdict(b)}")
        if b.skip_reason == "covering tests time out on B":
            again = candidates[checked.index(b)].model_copy(deep=True)
            patient.check(again)
            line += f"; subprocess with {args.timeout * 6:.0f}s: {verdict(again)}"
        say(line)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, required=True, help="a checked-out repository (left untouched)")
    parser.add_argument("--mutants", type=int, default=300, help="mutants our gating runs on (seeded sample)")
    parser.add_argument("--naive", type=int, default=40,
                        help="mutants for the naive procedure (a seeded uniform pick from ours)")
    parser.add_argument("--subprocess", type=int, default=0,
                        help="also gate this many of the sample with GateRunner and compare verdicts")
    parser.add_argument("--workers", type=int, default=2, help="children our worker runs at once")
    parser.add_argument("--cpus", type=float, default=2.0, help="CPU limit of our container")
    parser.add_argument("--mutmut-children", type=int, default=2)
    parser.add_argument("--mutmut-timeout", type=float, default=7200)
    parser.add_argument("--skip-mutmut", action="store_true")
    parser.add_argument("--timeout", type=float, default=10.0, help="wall clock per mutant (ours and naive)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--base-image", default=os.environ.get("R2E_BASE_IMAGE", "repo2rlenv-base:bookworm"))
    args = parser.parse_args(argv)
    repo = args.repo.resolve()
    say(f"repo {repo}; {os.cpu_count()} CPUs; {load()}")
    sandbox = DockerSandbox(base_image=args.base_image,
                            limits=Limits(timeout_sec=3600, cpus=args.cpus, memory_mb=4096, pids=1024),
                            tag_name=f"bench-{repo.name}".lower())
    start = time.monotonic()
    sandbox.prepare(repo)
    say(f"sandbox image {sandbox.image} ready in {time.monotonic() - start:.1f}s (not counted below)")

    # Ours, mutmut, ours again, naive: the machine's load moves every number, so the two runs of ours
    # bracket mutmut's and each ratio uses the mean of both.
    session, runner, baseline, candidates, sample, gates, (t_base, t_mine, t_gate) = run_ours(args, sandbox, repo)
    try:
        roots = [r for r in sandbox.plan.import_roots if r] or ["."]
        mutmut = run_mutmut(args, repo, [f"{r}/" for r in roots]) if not args.skip_mutmut else None
        say(f"\n== (a') ours again, same mutants [{load()}]")
        again, _, t_again = gate_once(args, runner, baseline, candidates)
        same = sum(1 for a, b in zip(sample, again) if verdict(a) == verdict(b))
        say(f"verdicts equal to the first run: {same} of {len(sample)}")
        # A uniform pick, so the naive run meets its share of the mutants that time out.
        picked = random.Random(args.seed).sample(sample, min(args.naive, len(sample)))
        naive_time, naive = run_naive(args, sandbox, picked) if args.naive else (0.0, [])
        report_ours(candidates, sample, gates)
        if args.subprocess:
            check_against_subprocess(args, runner, baseline, candidates, sample, gates)
    finally:
        session.close()

    say("\n== results")
    ours_rate = len(sample) * 2 / (t_gate + t_again)
    rows = [("ours: gating only, run 1", len(sample), f"{t_gate:.1f}", f"{len(sample) / t_gate:.2f}"),
            ("ours: gating only, run 2", len(sample), f"{t_again:.1f}", f"{len(sample) / t_again:.2f}"),
            ("ours: run 1 with baseline + mining", len(sample), f"{t_base + t_mine + t_gate:.1f}",
             f"{len(sample) / (t_base + t_mine + t_gate):.2f}")]
    if mutmut and mutmut[1]:
        wall, counts, own = mutmut
        rows.append(("mutmut run (wall clock, all phases)", counts["total"], f"{wall:.1f}",
                     f"{counts['total'] / wall:.2f}"))
        say("mutmut: " + ", ".join(f"{k} {v}" for k, v in counts.items()) + f"; its own rate {own} mutations/s")
    if naive:
        rows.append(("naive: fresh container + whole suite", len(naive), f"{naive_time:.1f}",
                     f"{len(naive) / naive_time:.2f}"))
        agree = sum(1 for cand, v in naive
                    if v == ("killed" if cand.killed or cand.status == "dropped" else "survived"))
        say(f"naive verdicts equal to ours: {agree} of {len(naive)} (the naive run uses the whole suite)")
        for cand, v in naive:
            if v != ("killed" if cand.killed or cand.status == "dropped" else "survived"):
                say(f"  {cand.function.qualname} [{cand.operator}] line {cand.line}: ours {outcome(cand)}, naive {v}")
    table("mutants per second", rows, ("procedure", "mutants", "seconds", "mutants/s"))
    if mutmut and mutmut[1]:
        mutmut_rate = mutmut[1]["total"] / mutmut[0]
        e2e = len(sample) / (t_base + t_mine + t_gate)
        say(f"\nours / mutmut: {ours_rate / mutmut_rate:.2f}x (gating only, mean of both runs), "
            f"{e2e / mutmut_rate:.2f}x (run 1 with baseline and mining, as mutmut's wall clock); target >= 1.0x")
    if naive:
        say(f"ours / naive:  {ours_rate / (len(naive) / naive_time):.1f}x; target >= 10x")
    say(f"[{load()}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())

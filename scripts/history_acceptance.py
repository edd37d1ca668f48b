"""The default command on pull-request-based libraries: how much of each becomes tasks from real history.

    python3 scripts/history_acceptance.py CLONE [CLONE ...] --out DIR [--limit 5] [--timeout 1200]

For every clone (a git checkout with its history), runs `repo2rlenv generate --repo CLONE --out DIR/NAME
--pipeline-opt limit=N` with only a time budget (`time_budget_min`, two minutes under `--timeout`) besides:
the default strategy, Docker when it is there, no model;
then `repo2rlenv audit DIR/NAME`, and prints one row per library: units scanned, dropped by reason (the
three largest), commits judged, seconds per judged commit, tasks from history (human / other oracle), from
mutants, the audit's verdict and the wall time. A run over `--timeout` is stopped and reported as such
(what it emitted by then still counts). Issue 33's acceptance: on ≥ 3 of 5 libraries ≥ 3 tasks from
history, ≥ 3 libraries with a human oracle, ≤ 20 min each.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path


def _run(argv: list[str], timeout: float) -> tuple[int | None, float]:
    started = time.monotonic()
    try:
        code = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=timeout).returncode
    except subprocess.TimeoutExpired:
        code = None
    return code, time.monotonic() - started


def _origins(out: Path) -> dict[str, dict[str, int]]:
    """strategy → oracle origin → tasks, read from the manifest."""
    counts: dict[str, dict[str, int]] = {}
    manifest = out / "manifest.jsonl"
    if not manifest.is_file():
        return counts
    for line in manifest.read_text().splitlines():
        row = json.loads(line)
        by = counts.setdefault(row.get("strategy", "?"), {})
        origin = row.get("oracle_origin") or "?"
        by[origin] = by.get(origin, 0) + 1
    return counts


def row(clone: Path, out_root: Path, limit: int, timeout: float) -> dict:
    out = out_root / clone.name
    env_argv = [sys.executable, "-m", "repo2rlenv"]
    # The run's own budget ends it cleanly (summary written) a little before the hard stop.
    budget = max(1.0, timeout / 60 - 2)
    code, seconds = _run([*env_argv, "generate", "--repo", str(clone), "--out", str(out),
                          "--pipeline-opt", f"limit={limit}", "--pipeline-opt", f"time_budget_min={budget:g}"],
                         timeout)
    summary = json.loads((out / "summary.json").read_text()) if (out / "summary.json").is_file() else {}
    audit_code, _ = _run([*env_argv, "audit", str(out)], 600) if (out / "manifest.jsonl").is_file() else (None, 0)
    origins = _origins(out)
    history = origins.get("commit_pair", {})
    drops = {k.removeprefix("commit: "): v for k, v in (summary.get("skip_reasons") or {}).items()
             if k.startswith("commit: ")}
    per_commit = ((summary.get("commit_pair") or {}).get("seconds_per_commit") or {}).get("mean")
    stopped = "budget" if summary.get("stopped") else ("timeout" if code is None else code)
    return {"library": clone.name, "exit": stopped, "minutes": round(seconds / 60, 1),
            "scanned": (summary.get("stages") or {}).get("commits scanned"),
            "top drops": dict(sorted(drops.items(), key=lambda kv: -kv[1])[:3]),
            "judged": (summary.get("stages") or {}).get("commits judged"), "s/commit": per_commit,
            "history human": history.get("human", 0), "history other": sum(history.values()) - history.get("human", 0),
            "mutants": sum(origins.get("mutation", {}).values()),
            "audit": {0: "clean", 1: "problems", None: "not run"}.get(audit_code, f"exit {audit_code}")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("clones", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--limit", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=1200, help="seconds per library")
    args = parser.parse_args(argv)
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    rows = []
    for clone in args.clones:
        rows.append(row(clone.resolve(), args.out, args.limit, args.timeout))
        print(json.dumps(rows[-1]), flush=True)
    keys = list(rows[0])
    print("\n| " + " | ".join(keys) + " |\n|" + "---|" * len(keys))
    for r in rows:
        print("| " + " | ".join(str(r[k]) for k in keys) + " |")
    many = sum(r["history human"] + r["history other"] >= 3 for r in rows)
    human = sum(r["history human"] > 0 for r in rows)
    print(f"\n≥ 3 tasks from history: {many} of {len(rows)}; a human oracle: {human} of {len(rows)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

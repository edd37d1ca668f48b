"""In-sandbox mutant gating worker: imports pytest and the repo once, then forks one child per mutant.

Copied into the sandbox with its siblings, one per section of the work (`gate_warmup`, `gate_swap`,
`gate_judge`, `gate_forking`), and run once per batch (stdlib + pytest only; never imports repo2rlenv):

    python gate_worker.py --spec SPEC.json --out RESULTS.jsonl

with the work copy of the repo as cwd and its import roots on PYTHONPATH. SPEC holds `rootdir`,
`basetemp` (a scratch dir), `workers` (children at once), `exitfirst` (stop a job's tests at the
first failure), `pytest_args` (the repo's pytest setup as every run applies it) and `jobs`, each
`{id, path, module, qualname, mutated_source, tests, timeout_sec}`. One JSON line per job goes to
RESULTS as soon as it is known: `{id, status, failing, duration, mode, detail}` with status one of
survived | killed | timeout | import_error | error (the child died without a verdict). One summary
line goes to stdout; pytest's own output goes to `basetemp`.

Why this shape: a pytest subprocess per mutant spends most of its time starting pytest (loading plugins,
importing the suite). Here a warm-up, a pytest run over the union of the jobs' tests, loads pytest's
plugins, the conftests, the test modules and the package once and collects the tests; each child then
only runs its tests. The warm-up's `pytest_runtestloop` is ours: still inside that run (config configured,
items collected, no test run), it forks a child per swap-path job, which runs the job's items through
pytest's own run-test protocol, in the job's order, as `pytest -x ID...` would (no pytest start at all).
Jobs that cannot go that way (a `fresh` mutant, a test the warm-up did not collect, an import check, a
session the child cannot take over) are judged after the warm-up's pytest has finished, by children
that each call `pytest.main` on the job's tests.

The verdict must equal a plain pytest subprocess with the mutated file on disk, so a child puts the
mutant in one of two ways:
- `swap`: replace `__code__` on every live function object whose code is the original's (the module
  attribute alone is not enough: default arguments, aliases, decorator closures and `__wrapped__` keep
  references). The test modules stay imported (their import and assertion rewriting are most of a
  pytest start): allowed only when nothing that ran in the parent could have seen the original's
  behaviour, so that nothing a test module built at import time holds an outcome of the original code:
  the module's import-time code is unchanged (line numbers aside), the changed functions never ran
  during the warm-up (a profiler records what ran: module-level calls, decorators
  applied at import, caches filled at collection), and free variables and the function kind
  (generator, coroutine) are unchanged.
- `fresh`: otherwise, drop every module of the repo and re-import it with the target module's source
  served from memory (nothing is written to the work copy, so no stale bytecode can be picked up).
Either way the mutated source is also what a later import or `importlib.reload` of the module gets, and
what `linecache` (tracebacks, `inspect.getsource`) shows, as with the file on disk.
An import check (GateRunner's) runs only where the tests did not all pass, as in the subprocess gate.
"""

import argparse
import gc
import json
import os
import sys
import time

from gate_warmup import cache_distributions, warm_up
from gate_judge import judge
from gate_forking import run_in_session, run_jobs


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    with open(args.spec, encoding="utf-8") as handle:
        spec = json.load(handle)
    os.makedirs(spec["basetemp"], exist_ok=True)
    # A fresh-path child re-imports the test modules, and pytest re-does their assertion rewriting (a
    # compile per file) unless it finds bytecode; keep bytecode in a scratch tree, never in the work copy. The
    # mutated module itself is compiled from memory by MutantLoader and never cached.
    sys.pycache_prefix = os.path.join(spec["basetemp"], "pycache")
    sys.dont_write_bytecode = False
    # pytest and the repo's code print to fds 1 and 2; keep the worker's own stdout for one summary line.
    summary = os.fdopen(os.dup(1), "w")
    log = open(os.path.join(spec["basetemp"], "worker.log"), "w")
    os.dup2(log.fileno(), 1)
    os.dup2(log.fileno(), 2)
    start = time.monotonic()
    cache_distributions()
    exitfirst = bool(spec.get("exitfirst", False))
    counts = {}
    warmup_sec = None
    with open(args.out, "w", encoding="utf-8") as out:
        def emit(result):
            counts[result["status"]] = counts.get(result["status"], 0) + 1
            out.write(json.dumps(result) + "\n")
            out.flush()

        def run_live(warm, session, recorder):
            nonlocal warmup_sec
            warmup_sec = time.monotonic() - start
            return run_in_session(spec, warm, session, recorder, emit)

        warm, left = warm_up(spec, log, run_live)
        if warmup_sec is None:
            warmup_sec = time.monotonic() - start
        # Children need not scan the warm objects again for garbage; keeps copy-on-write pages shared.
        gc.collect()
        gc.freeze()
        run_jobs(spec, left, lambda job, basetemp: judge(job, warm, basetemp, exitfirst), emit)
    summary.write(json.dumps({"jobs": len(spec["jobs"]), "warmup_sec": round(warmup_sec, 3),
                              "total_sec": round(time.monotonic() - start, 3), "statuses": counts}) + "\n")
    summary.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())


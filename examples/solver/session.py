"""The reference solver as a library, with a session that survives its process.

    python examples/solver/session.py --repo PATH --target pkg/mod.py::func \
        --llm openai/MODEL --llm-base-url http://127.0.0.1:8000/v1 [--api-key-env VAR] \
        --out OUT [--store json|sqlite] [--session NAME]

Writes tests for one function of PATH in a local sandbox, printing each event as it happens. The state
is saved after every completed round (OUT/sessions/NAME.json, or OUT/sessions.db with --store sqlite): kill
the script and run the same command again, and the solve continues from its last completed round; run it
once more after it ended and it prints the saved result without a model call. The test file is confined
to new files under tests/ (the policy diff mode uses).

Without the resumable session, the events and the ledger file, the whole of it is:

    from repo2rlenv.solver import Solver

    result = Solver.for_model("openai/MODEL").solve_function("PATH", "pkg/mod.py::func")
"""

from __future__ import annotations

import argparse
from pathlib import Path

from repo2rlenv.llm import Ledger
from repo2rlenv.solver import Solver, SolverHooks, Trajectory
from repo2rlenv.solver.sessions import JsonStore, SqlStore


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, required=True)
    parser.add_argument("--target", required=True, help="path.py::qualname")
    parser.add_argument("--llm", required=True)
    parser.add_argument("--llm-base-url", default=None)
    parser.add_argument("--api-key-env", default=None)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--store", choices=["json", "sqlite"], default="json")
    parser.add_argument("--session", default="session-1")
    parser.add_argument("--max-rounds", type=int, default=4)
    args = parser.parse_args()

    args.out.mkdir(parents=True, exist_ok=True)
    hooks = SolverHooks(
        on_tool_call=lambda e: print(f"tool call: {e.tool} {e.args}", flush=True),
        on_tool_result=lambda e: print(f"tool result: {e.tool} ok={e.ok}", flush=True),
        on_round_end=lambda s: print(f"round {s.round} ({s.role}): {s.summary}", flush=True),
        on_finish=lambda r: print(f"finished: {r.stop_reason.value} after {r.rounds} round(s)", flush=True))
    solver = Solver.for_model(args.llm, base_url=args.llm_base_url, api_key_env=args.api_key_env,
                              max_rounds=args.max_rounds, llm_max_retries=0,
                              ledger=Ledger(args.out / "ledger.jsonl"), hooks=hooks,
                              trajectory=Trajectory(args.out / "trajectory.jsonl"))
    store = JsonStore(args.out / "sessions") if args.store == "json" else SqlStore(f"sqlite:///{args.out / 'sessions.db'}")
    result = solver.solve_function(args.repo, args.target, store=store, session_id=args.session)
    (args.out / "result.json").write_text(result.model_dump_json(indent=2) + "\n")
    print(f"result: {result.stop_reason.value}, rounds {result.rounds}, files {sorted(result.files)}")


if __name__ == "__main__":
    main()

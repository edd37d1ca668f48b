"""The repair loop: plan once, write the tests, run them, feed back failures and uncovered lines, repeat.

TestPilot's design (generate → run in a sandbox with a timeout → repair up to N rounds, where a repair
may answer `VERDICT: CODE_BUG` instead of weakening an assertion) with a planning call in front. Before
every call the token budget and the spend ceiling are checked; the loop stops on success, a verdict, no
progress (the same failing set two rounds running), the round limit, the budget or the ceiling.

The loop only talks to a sandbox `Session` (a Docker container, a local venv, or a Harbor environment
through `harbor_session.HarborSession`) and to `ChatClient`s, so the CLI, the eval harness and the
Harbor agent all run exactly this code.
"""

from __future__ import annotations

import posixpath
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from repo2rlenv.llm.base import ChatClient, Completion, Message
from repo2rlenv.llm.errors import CassetteMiss, LLMCallFailed, SpendLimitReached
from repo2rlenv.llm.ledger import Ledger, LedgerTotals
from repo2rlenv.sandbox.base import Session
from repo2rlenv.solver import prompts
from repo2rlenv.solver.config import CallRole, SolverConfig
from repo2rlenv.solver.context import RepoContext, gather_context, read_text
from repo2rlenv.solver.edits import PathPolicy, apply_edits
from repo2rlenv.solver.events import EventKind, RoundSummary, SolverHooks, ToolEvent, Trajectory
from repo2rlenv.solver.replies import parse_reply
from repo2rlenv.solver.result import SolveResult, StopReason
from repo2rlenv.solver.target import Target, is_test_file
from repo2rlenv.solver.testrun import TestBench, TestReport
from repo2rlenv.verifiers.test_synthesis.verifier_lint import lint_source


@dataclass
class _Run:
    """The state of one solve."""

    target: Target
    session: Session
    policy: PathPolicy
    ledger_start: int
    started: float = field(default_factory=time.monotonic)
    round: int = 0
    head: list[tuple[int, Message]] = field(default_factory=list)  # system + first request
    pairs: list[list[tuple[int, Message]]] = field(default_factory=list)  # (reply, feedback) per round
    files: dict[str, str] = field(default_factory=dict)
    plan: str | None = None
    verdict: str | None = None
    report: TestReport | None = None
    stop: StopReason | None = None
    detail: str = ""
    store: Any = None  # a sessions.SessionStore, when the solve is saved round by round
    session_id: str | None = None


def _round_summary(number: int, role: CallRole, outcome: str, report: TestReport | None,
                   reply: Completion) -> RoundSummary:
    tokens = reply.usage.prompt_tokens + reply.usage.completion_tokens
    if report is None:
        return RoundSummary(round=number, role=role.value, outcome=outcome, summary=outcome.replace("_", " "),
                            tokens=tokens)
    return RoundSummary(round=number, role=role.value, outcome=outcome, summary=report.summary(),
                        passed=len(report.passed()), failing=len(report.failing()),
                        new_coverage=len(report.new_coverage()), targets=len(report.targets()), tokens=tokens)


class Solver:
    """Runs solves with one set of clients, one ledger and one set of hooks."""

    def __init__(self, clients: Mapping[CallRole, ChatClient], config: SolverConfig, ledger: Ledger, *,
                 hooks: SolverHooks | None = None, trajectory: Trajectory | None = None,
                 spent_before_usd: float = 0.0):
        """`ledger` is the one the clients record into; `spent_before_usd` counts toward the ceiling
        (spend of an earlier, resumed run)."""
        self.clients = clients
        self.config = config
        self.ledger = ledger
        self.hooks = hooks or SolverHooks()
        self.trajectory = trajectory or Trajectory()
        self.spent_before_usd = spent_before_usd

    @classmethod
    def for_model(cls, model: str, *, ledger: Ledger | None = None, hooks: SolverHooks | None = None,
                  trajectory: Trajectory | None = None, **settings: Any) -> "Solver":
        """A solver for `model` (a litellm id, e.g. "openai/gpt-4o-mini") with `SolverConfig`'s defaults;
        `settings` override any of its fields (base_url, api_key_env, max_rounds, ...). Calls are recorded
        in `ledger` (default: in memory, read back as `solver.ledger`)."""
        from repo2rlenv.solver.clients import build_clients

        config = SolverConfig(model=model, **settings)
        ledger = ledger if ledger is not None else Ledger()
        return cls(build_clients(config, ledger), config, ledger, hooks=hooks, trajectory=trajectory)

    def solve_function(self, repo: str | Path, target: str, *, sandbox: Any = None, store: Any = None,
                       session_id: str | None = None) -> SolveResult:
        """Write tests for `target` (`path.py::qualname`) of the repo at `repo`, in a local sandbox unless
        `sandbox` is given; with `store` and `session_id` the solve survives its process (see `solve`)."""
        from repo2rlenv.solver.one_function import solve_function

        return solve_function(self, Path(repo), target, sandbox=sandbox, store=store, session_id=session_id)

    # ------------------------------------------------------------------ events

    def _message(self, run: _Run, message: Message, **extra: Any) -> tuple[int, Message]:
        event = self.trajectory.add(round=run.round, kind=EventKind.MESSAGE, role=message["role"],
                                    content=message["content"], **extra)
        return event.seq, message

    def _tool(self, run: _Run, tool: str, args: dict[str, Any], action: Callable[[], Any],
              describe: Callable[[Any], dict[str, Any]]) -> Any:
        self.trajectory.add(round=run.round, kind=EventKind.TOOL_CALL, tool=tool, data=args)
        if self.hooks.on_tool_call:
            self.hooks.on_tool_call(ToolEvent(run.round, tool, args))
        try:
            value = action()
        except Exception as exc:
            self.trajectory.add(round=run.round, kind=EventKind.TOOL_RESULT, tool=tool,
                                data={"ok": False, "error": f"{type(exc).__name__}: {exc}"})
            raise
        result = describe(value)
        self.trajectory.add(round=run.round, kind=EventKind.TOOL_RESULT, tool=tool, data={"ok": True, **result})
        if self.hooks.on_tool_result:
            self.hooks.on_tool_result(ToolEvent(run.round, tool, args, ok=True, result=result))
        return value

    # ------------------------------------------------------------------ budgets and calls

    def _totals(self, run: _Run) -> LedgerTotals:
        totals = LedgerTotals()
        for entry in self.ledger.entries[run.ledger_start:]:
            totals.add(entry)
        return totals

    def _over_budget(self, run: _Run) -> StopReason | None:
        if self.config.max_spend_usd is not None:
            spent = self.spent_before_usd + self.ledger.spent_usd()
            if spent >= self.config.max_spend_usd:
                run.detail = f"spent ${spent:.4f} of the ${self.config.max_spend_usd:.4f} ceiling"
                return StopReason.SPEND_LIMIT
        if self.config.token_budget is not None:
            totals = self._totals(run)
            used = totals.prompt_tokens + totals.completion_tokens
            if used >= self.config.token_budget:
                run.detail = f"used {used} of the {self.config.token_budget} token budget"
                return StopReason.TOKEN_BUDGET
        return None

    def _call(self, run: _Run, role: CallRole, request: list[tuple[int, Message]]) -> Completion | None:
        """One model call; None when the loop must stop (the reason is set on `run`)."""
        run.stop = self._over_budget(run)
        if run.stop is not None:
            return None
        stream = self.hooks.on_stream
        extra = {} if stream is None else {"on_token": lambda piece: stream(role.value, piece)}
        try:
            reply = self.clients[role].complete([m for _, m in request], role=role.ledger_role, **extra)
        except SpendLimitReached as exc:
            run.stop, run.detail = StopReason.SPEND_LIMIT, str(exc)
            return None
        except (LLMCallFailed, CassetteMiss) as exc:
            run.stop, run.detail = StopReason.MODEL_ERROR, str(exc)
            return None
        if self.hooks.on_reply:
            self.hooks.on_reply(role.value, reply.text)
        return reply

    def _answer(self, run: _Run, role: CallRole, request: list[tuple[int, Message]],
                reply: Completion) -> tuple[int, Message]:
        return self._message(run, {"role": "assistant", "content": reply.text}, call_role=role.value,
                             request=[seq for seq, _ in request], model=reply.model,
                             prompt_tokens=reply.usage.prompt_tokens,
                             completion_tokens=reply.usage.completion_tokens, cost_usd=reply.cost_usd)

    # ------------------------------------------------------------------ the loop

    def solve(self, task_text: str, target: Target, session: Session, policy: PathPolicy, *,
              store: Any = None, session_id: str | None = None) -> SolveResult:
        """Write tests for `target` in `session`; `task_text` is what the model is told the task is.

        With a `store` (`sessions.py`) and a `session_id`, the state is saved after every completed round:
        the same call after a kill continues from the last completed round (the files written so far are
        put back into `session`), and after the end returns the saved result without a call."""
        state = store.load(session_id) if store is not None and session_id else None
        if state is not None and state.result is not None:
            return state.result
        if state is not None:
            self.trajectory.continue_file()  # before any event of this process: the numbering goes on
        run = _Run(target=target, session=session, policy=policy, ledger_start=len(self.ledger.entries),
                   store=store if session_id else None, session_id=session_id)
        ctx = self._tool(run, "read_context", {"path": target.path, "qualname": target.qualname},
                         lambda: gather_context(session, target),
                         lambda c: {"function_lines": c.function.body_lines, "example_test": c.example_test_path})
        bench = TestBench(session, target, ctx.function, timeout=self.config.test_timeout_sec,
                          coverage=self.config.coverage, selection=self.config.selection_args())
        if state is not None:
            previous = self._restore(run, bench, state)
            self._rounds(run, bench, ctx, start=state.round + 1, previous=previous)
            return self._finish(run)
        baseline = None
        if self.config.measure_baseline and self.config.coverage:
            baseline = self._tool(run, "run_existing_tests", {"timeout_sec": self.config.baseline_timeout_sec},
                                  lambda: bench.measure_baseline(self.config.baseline_timeout_sec),
                                  lambda b: {"covered_function_lines": b})
        context = prompts.context_block(task_text, target, ctx, baseline)
        system = self._message(run, prompts.system_message())
        if self.config.plan:
            self._plan(run, system, context)
        if run.stop is None:
            run.head = [system, self._message(run, {"role": "user", "content": prompts.generate_request(
                context, run.plan, target, ctx)})]
            self._save(run, bench, None)
            self._rounds(run, bench, ctx)
        return self._finish(run)

    # ------------------------------------------------------------------ sessions

    def _save(self, run: _Run, bench: TestBench, previous: tuple | None, result: SolveResult | None = None) -> None:
        if run.store is None:
            return
        from repo2rlenv.solver.sessions import SavedMessage, SessionState

        def saved(messages: list[tuple[int, Message]]) -> list[SavedMessage]:
            return [SavedMessage(seq=seq, role=m["role"], content=m["content"]) for seq, m in messages]

        run.store.save(SessionState(
            session_id=run.session_id, target=run.target, round=run.round, plan=run.plan,
            baseline=bench.baseline_covered, head=saved(run.head), pairs=[saved(pair) for pair in run.pairs],
            files=dict(run.files), previous=[list(part) for part in previous] if previous else None, result=result))

    def _restore(self, run: _Run, bench: TestBench, state: Any) -> tuple | None:
        """Put a saved session back: its conversation, plan, baseline and files (written into the sandbox
        again); returns the last round's signature."""
        run.round, run.plan, bench.baseline_covered = state.round, state.plan, state.baseline
        run.head = [(m.seq, {"role": m.role, "content": m.content}) for m in state.head]
        run.pairs = [[(m.seq, {"role": m.role, "content": m.content}) for m in pair] for pair in state.pairs]
        for path, content in state.files.items():
            run.session.write_files({posixpath.join(run.session.workspace, path): content})
            run.files[path] = content
        self.trajectory.add(round=run.round, kind=EventKind.TOOL_RESULT, tool="resume_session",
                            data={"ok": True, "session_id": run.session_id, "round": run.round,
                                  "files": sorted(state.files)})
        return tuple(tuple(part) for part in state.previous) if state.previous else None

    def _plan(self, run: _Run, system: tuple[int, Message], context: str) -> None:
        request = [system, self._message(run, {"role": "user", "content": prompts.plan_request(context, run.target)})]
        reply = self._call(run, CallRole.PLAN, request)
        if reply is not None:
            self._answer(run, CallRole.PLAN, request, reply)
            run.plan = reply.text

    def _request(self, run: _Run) -> list[tuple[int, Message]]:
        recent = run.pairs[-self.config.history_rounds:]
        return run.head + [m for pair in recent for m in pair]

    def _rounds(self, run: _Run, bench: TestBench, ctx: RepoContext, *, start: int = 1,
                previous: tuple | None = None) -> None:
        for number in range(start, self.config.max_rounds + 1):
            run.round = number
            role = CallRole.GENERATE if number == 1 else CallRole.REPAIR
            request = self._request(run)
            reply = self._call(run, role, request)
            if reply is None:
                run.round = number - 1
                return
            answer = self._answer(run, role, request, reply)
            outcome, text, report = self._act(run, bench, ctx, reply.text)
            summary = _round_summary(number, role, outcome, report, reply)
            if run.stop is None and report is not None and report.ran:
                signature = report.signature()
                if signature == previous:
                    run.stop = StopReason.NO_PROGRESS
                    run.detail = f"the same {len(report.failing())} failing test(s) two rounds running"
                previous = signature
            elif run.stop is None:
                previous = None
            if self.hooks.on_round_end:
                self.hooks.on_round_end(summary)
            if run.stop is not None:
                return
            run.pairs.append([answer, self._message(run, {"role": "user", "content": text})])
            self._save(run, bench, previous)
        run.stop = StopReason.ROUND_LIMIT
        run.detail = f"{self.config.max_rounds} round(s) without passing tests that add coverage"

    def _act(self, run: _Run, bench: TestBench, ctx: RepoContext, text: str) -> tuple[str, str, TestReport | None]:
        """Apply one reply; returns (outcome, feedback text, test report if the tests ran)."""
        target = run.target
        parsed = parse_reply(text, default_path=target.test_path)
        if parsed.edits:
            changed, errors = apply_edits(parsed.edits,
                                          lambda p: run.files[p] if p in run.files else read_text(run.session, p),
                                          run.policy, run.session.workspace)
            if errors:
                if parsed.verdict is not None:
                    return self._verdict(run, parsed.verdict)
                return "edit_error", prompts.edit_errors(errors), None
            for path, content in changed.items():
                self._tool(run, "write_file", {"path": path, "chars": len(content)},
                           lambda p=path, c=content: run.session.write_files({posixpath.join(run.session.workspace, p): c}),
                           lambda _v: {})
                run.files[path] = content
        if parsed.verdict is not None:
            return self._verdict(run, parsed.verdict)
        if not parsed.edits:
            return "no_edits", prompts.no_edits(target, parsed.problems), None
        tests = sorted(p for p in run.files if p == target.test_path or is_test_file(p))
        findings = [f"{p} line {f.line}: {f.rule}: {f.message}"
                    for p in tests for f in (lint_source(run.files[p], p) if self.config.lint else [])]
        if findings:
            report = bench.refused(tests, findings)
            run.report = report
            return "lint", prompts.lint_refusal(report, target), report
        report = self._tool(run, "run_tests", {"paths": tests}, lambda: bench.run(tests),
                            lambda r: {"summary": r.summary(), "passed": r.passed(), "failing": r.failing(),
                                       "covered": r.covered, "uncovered": r.uncovered(), "timed_out": r.timed_out})
        run.report = report
        if report.succeeded():
            run.stop = StopReason.SOLVED
            return "tests", "", report
        # The file shown is the one the model wrote: in diff mode it may have chosen another test path.
        current_path = target.test_path if target.test_path in run.files else tests[0]
        return "tests", prompts.feedback(report, run.files[current_path], current_path, target, ctx, self.config), report

    def _verdict(self, run: _Run, reason: str) -> tuple[str, str, None]:
        run.stop, run.verdict = StopReason.CODE_BUG, reason
        run.detail = reason or "the model judged the code under test wrong"
        return "verdict", "", None

    def _finish(self, run: _Run) -> SolveResult:
        totals = self._totals(run)
        stop = run.stop or StopReason.ROUND_LIMIT
        result = SolveResult(
            target=run.target, stop_reason=stop, detail=run.detail, rounds=run.round, plan=run.plan,
            verdict=run.verdict, files=dict(run.files), last_report=run.report, calls=totals.ok,
            prompt_tokens=totals.prompt_tokens, completion_tokens=totals.completion_tokens,
            cost_usd=totals.cost_usd, unpriced_calls=totals.unpriced, duration_sec=time.monotonic() - run.started,
            unverified=self.config.unverified())
        self.trajectory.add(round=run.round, kind=EventKind.STOP, data={
            "stop_reason": stop.value, "detail": run.detail, "rounds": run.round, "solved": result.solved,
            "tokens": result.tokens, "cost_usd": result.cost_usd})
        if run.store is not None:
            from repo2rlenv.solver.sessions import SessionState

            run.store.save(SessionState(session_id=run.session_id, target=run.target, round=run.round,
                                        plan=run.plan, files=dict(run.files), result=result))
        if self.hooks.on_finish:
            self.hooks.on_finish(result)
        return result

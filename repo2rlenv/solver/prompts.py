"""The solver's messages, rendered from `templates/*.md` with `string.Template`.

One context block (the task, the function, the module, an existing test, the unexecuted lines) opens
both the planning and the first generation request; feedback turns are short and always carry the
current file, so older turns can be dropped from a repair prompt without losing anything it needs.
"""

from __future__ import annotations

from importlib import resources
from string import Template

from repo2rlenv.llm.base import Message
from repo2rlenv.solver.config import SolverConfig
from repo2rlenv.solver.context import RepoContext
from repo2rlenv.solver.edits import EditError
from repo2rlenv.solver.target import Target
from repo2rlenv.solver.testrun import TestReport
from repo2rlenv.solver.text import clip, numbered


def _template(name: str) -> Template:
    return Template(resources.files(__package__).joinpath("templates", name).read_text(encoding="utf-8"))


def _lines_section(ctx: RepoContext, lines: list[int], heading: str) -> str:
    if not lines:
        return ""
    shown = "\n".join(numbered(ctx.module_source, ln, ln) for ln in lines)
    return f"{heading}\n\n```\n{shown}\n```\n"


def system_message() -> Message:
    return {"role": "system", "content": _template("system.md").template.strip()}


def context_block(task_text: str, target: Target, ctx: RepoContext, baseline: list[int] | None) -> str:
    targets = [ln for ln in ctx.function.body_lines if ln not in set(baseline or [])]
    if baseline is None:
        heading = "(Which lines the existing tests execute could not be measured.)"
        lines_text = heading + "\n"
    elif targets:
        lines_text = _lines_section(ctx, targets, f"Lines of `{target.qualname}` that no existing test executes:")
    else:
        lines_text = f"The existing tests execute every line of `{target.qualname}`.\n"
    return _template("context.md").substitute(
        task=task_text.strip(), path=target.path, function_source=ctx.function_source,
        imports=ctx.imports or "# (none)", nearby=ctx.nearby or "# (nothing else)",
        example_path=ctx.example_test_path or "none found",
        example_test=(ctx.example_test or "# (no existing test uses the module)").strip("\n"),
        targets=lines_text).strip()


def plan_request(context: str, target: Target) -> str:
    return _template("plan.md").substitute(context=context, qualname=target.qualname).strip()


def generate_request(context: str, plan: str | None, target: Target, ctx: RepoContext) -> str:
    plan_text = f"\nYour plan:\n\n{plan.strip()}\n" if plan else ""
    return _template("generate.md").substitute(
        context=context, plan=plan_text, test_path=target.test_path,
        import_lines="\n".join(ctx.import_lines)).strip()


def _failures_section(report: TestReport, config: SolverConfig) -> str:
    failing = [c for c in report.cases if c.nodeid in set(report.failing())]
    if not failing:
        return ""
    shown = failing[:config.failures_shown]
    head = f"\nFailures ({len(shown)} of {len(failing)}):\n"
    body = "".join(f"\n{c.nodeid}:\n```\n{clip(c.detail.strip() or '(no message)', config.failure_chars)}\n```\n"
                   for c in shown)
    return head + body


def _coverage_section(report: TestReport, target: Target, ctx: RepoContext) -> str:
    if report.ran and not report.covered:
        return (f"\nYour tests never execute `{target.qualname}`: call it (from `{target.module}`) and assert "
                "on what it returns or does.\n")
    if not report.targets():
        return ""
    missing = report.uncovered()
    if not missing:
        return f"\nYour tests execute every line of `{target.qualname}` that the existing tests miss.\n"
    heading = f"Lines of `{target.qualname}` that neither your tests nor the existing ones execute yet:"
    return "\n" + _lines_section(ctx, missing, heading)


def feedback(report: TestReport, current: str, current_path: str, target: Target, ctx: RepoContext,
             config: SolverConfig) -> str:
    """The repair prompt: what ran, what failed, what is still uncovered, and `current_path`'s text."""
    return _template("feedback.md").substitute(
        test_path=current_path, summary=report.summary(), failures=_failures_section(report, config),
        coverage=_coverage_section(report, target, ctx), current=current.rstrip("\n"),
        qualname=target.qualname).strip()


def lint_refusal(report: TestReport, target: Target) -> str:
    findings = "\n".join(f"- {f}" for f in report.lint)
    return _template("lint.md").substitute(test_path=target.test_path, findings=findings).strip()


def edit_errors(errors: list[EditError]) -> str:
    text = "\n\n".join(f"{e.path} ({e.failure.value}): {e.message}" for e in errors)
    return _template("edit_error.md").substitute(errors=text).strip()


def no_edits(target: Target, problems: list[str]) -> str:
    detail = "".join(f"\n- {p}" for p in problems)
    return _template("no_edits.md").substitute(problems=detail, test_path=target.test_path).strip()

"""The LLM oracle's messages: the first request (templates/system.md, templates/task.md) and the feedback after
a rejected attempt (templates/feedback.md), rendered with `string.Template`.

The feedback is the verifier's view of the attempt, short: which tests failed on A (with the end of
their error text), which passed on B, which were fine, or what a static check refused.
"""

from __future__ import annotations

from importlib import resources
from string import Template

from repo2rlenv.llm.base import Message
from repo2rlenv.pipelines.test_synthesis.oracle.llm.check import PASSED, Judgement
from repo2rlenv.pipelines.test_synthesis.oracle.llm.context import OracleContext
from repo2rlenv.pysource.sections import (
    module_imports,
    nearby_code,
    imports_reaching,
    truncate,
)

MAX_TAIL_CHARS = 800
MAX_LISTED = 8
MAX_FEEDBACK_CHARS = 5000


def _template(name: str) -> Template:
    return Template(resources.files(__package__).joinpath("templates", name).read_text(encoding="utf-8"))


def _code(text: str | None, empty: str) -> str:
    return (text or "").strip("\n") or empty


def initial_messages(ctx: OracleContext) -> list[Message]:
    """The system message and the task: the function, the diff, its surroundings, an example test, the rules."""
    fallback = f"from {ctx.module} import {ctx.qualname.split('.')[0]}"
    imports = imports_reaching(ctx.example_test, ctx.module) or [fallback]
    task = _template("task.md").substitute(
        qualname=ctx.qualname,
        target_file=ctx.target_file,
        module=ctx.module,
        function_source=_code(ctx.function_source, "# (not available)"),
        diff=_code(truncate(ctx.diff), "(empty)"),
        imports=_code(module_imports(ctx.module_source), "# (none)"),
        nearby=_code(nearby_code(ctx.module_source, ctx.qualname), "# (nothing else)"),
        example_path=ctx.example_test_path or "none found",
        example_test=_code(truncate(ctx.example_test or ""), "# (no existing test covers this function)"),
        test_path=ctx.test_path,
        import_lines="\n".join(f"   `{line}`" for line in imports),
        max_test_loc=ctx.max_test_loc,
        min_new_tests=ctx.min_new_tests,
        max_tests=ctx.max_tests,
    )
    return [{"role": "system", "content": _template("system.md").template.strip()},
            {"role": "user", "content": task.strip()}]


def _tail(text: str) -> str:
    text = text.strip()
    return text if len(text) <= MAX_TAIL_CHARS else "..." + text[-MAX_TAIL_CHARS:]


def _listing(names: list[str]) -> str:
    shown = "\n".join(f"- {n}" for n in names[:MAX_LISTED])
    return shown + (f"\n- ... and {len(names) - MAX_LISTED} more" if len(names) > MAX_LISTED else "")


def _details(j: Judgement) -> str:
    parts = [j.detail] if j.detail else []
    if j.collection_errors and not j.cases:
        parts.append(f"pytest could not collect the file on version A:\n```\n{_tail(j.collection_errors[0])}\n```")
    if j.failing_on_a:
        lines = ["These tests do not pass on version A (each must pass there; fix or remove it):"]
        for name in j.failing_on_a[:MAX_LISTED]:
            tail = j.tails_a.get(name)
            lines.append(f"- {name}: {j.on_a.get(name, 'not run')}" + (f"\n```\n{_tail(tail)}\n```" if tail else ""))
        parts.append("\n".join(lines))
    if j.passing_on_b:
        parts.append("These tests also pass on version B, so they do not detect the change (make them check "
                     "the behaviour the diff changes, or remove them):\n" + _listing(j.passing_on_b))
    good = [c for c in j.cases if j.on_a.get(c) == PASSED and c in j.on_b and c not in j.passing_on_b]
    if good and (j.failing_on_a or j.passing_on_b):
        parts.append("These tests are right (pass on A, fail on B); keep them:\n" + _listing(good))
    return truncate("\n\n".join(parts), MAX_FEEDBACK_CHARS)


def feedback_message(judgement: Judgement) -> str:
    """The user message after a rejected attempt."""
    return _template("feedback.md").substitute(verdict=judgement.verdict.value, details=_details(judgement)).strip()

"""One oracle file from two: the tests that catch B, plus those a second search found for a sibling mutant.

The reference tests must catch every sibling a task ships with (else the sibling is dropped and the
reward has nothing to grade with), but they were searched for B alone, and on well-tested code they
seldom catch a sibling by chance. A search aimed at the sibling finds tests that do; this module adds
them to the oracle text, without reformatting it: the extra file's imports that the oracle lacks go
after the oracle's own, its test functions (decorators included) go at the end, renamed where a name is
taken. Anything else at the extra file's top level (helpers, constants) could collide or change the
oracle's meaning, so such a file is not merged.
"""

from __future__ import annotations

import ast

_TESTS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _segment(lines: list[str], node: ast.stmt) -> list[str]:
    start = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
    return lines[start - 1:node.end_lineno]


def _is_docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def merge_tests(base: str, extra: str, suffix: str) -> str | None:
    """`base` with `extra`'s test functions and missing imports added; None when `extra` holds anything else
    at its top level, or either does not parse."""
    try:
        base_tree, extra_tree = ast.parse(base), ast.parse(extra)
    except SyntaxError:
        return None
    imports = [n for n in extra_tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    tests = [n for n in extra_tree.body if isinstance(n, _TESTS) and n.name.startswith("test")]
    rest = [n for n in extra_tree.body if n not in imports and n not in tests and not _is_docstring(n)]
    if rest or not tests:
        return None
    lines, extra_lines = base.splitlines(), extra.splitlines()
    have = {ast.unparse(n) for n in base_tree.body if isinstance(n, (ast.Import, ast.ImportFrom))}
    new_imports = [ln for n in imports if ast.unparse(n) not in have for ln in _segment(extra_lines, n)]
    taken = {n.name for n in ast.walk(base_tree) if isinstance(n, (*_TESTS, ast.ClassDef))}
    added: list[str] = []
    for node in tests:
        segment = _segment(extra_lines, node)
        name = node.name
        if name in taken:
            name = f"{node.name}_{suffix}"
            if name in taken:
                return None
            at = node.lineno - min([node.lineno, *(d.lineno for d in node.decorator_list)])
            segment[at] = segment[at].replace(f"def {node.name}(", f"def {name}(", 1)
        taken.add(name)
        added += ["", "", *segment]
    last_import = max((n.end_lineno for n in base_tree.body if isinstance(n, (ast.Import, ast.ImportFrom))), default=0)
    merged = [*lines[:last_import], *new_imports, *lines[last_import:]]
    text = "\n".join(merged).rstrip("\n") + "\n" + "\n".join(added) + "\n"
    try:
        ast.parse(text)
    except SyntaxError:
        return None
    return text

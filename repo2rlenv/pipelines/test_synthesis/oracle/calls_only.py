"""The oracle with its checks taken out: the same calls, nothing asserted.

A sibling mutant this version still catches shows itself by crashing (an exception where A returns),
which any call notices; one only the asserting oracle catches changes a value. The graded reward should
pay assertions, so `Synthesizer._siblings` prefers the second kind (issue 16's figure: on crash-type
siblings a file that calls without asserting earned as much as the oracle).
"""

from __future__ import annotations

import ast


class _Unassert(ast.NodeTransformer):
    """assert E → the expression E checks (the left side of a comparison, the operand of a `not`);
    `with pytest.raises(...)` → try/except BaseException around its body."""

    def visit_Assert(self, node: ast.Assert) -> ast.stmt:
        inner = node.test.left if isinstance(node.test, ast.Compare) else node.test
        if isinstance(inner, ast.UnaryOp) and isinstance(inner.op, ast.Not):
            inner = inner.operand
        return ast.copy_location(ast.Expr(inner), node)

    def visit_With(self, node: ast.With) -> ast.stmt:
        self.generic_visit(node)
        raising = any(isinstance(i.context_expr, ast.Call) and "raises" in ast.unparse(i.context_expr.func)
                      for i in node.items)
        if not raising:
            return node
        handler = ast.ExceptHandler(type=ast.Name("BaseException", ast.Load()), name=None, body=[ast.Pass()])
        return ast.copy_location(ast.Try(body=node.body, handlers=[handler], orelse=[], finalbody=[]), node)


def calls_only(source: str) -> str | None:
    """`source` with every assertion turned into a bare evaluation; None when it does not parse."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    return ast.unparse(ast.fix_missing_locations(_Unassert().visit(tree))) + "\n"

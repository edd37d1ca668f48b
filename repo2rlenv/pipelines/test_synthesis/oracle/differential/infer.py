"""Types of unannotated parameters, read off how the function body uses them (issue 16, item 5).

When no existing test calls a function and a parameter has neither an annotation nor a default, the
generated calls used to try ints, None and "" in it alike. An int where the body calls `.lower()` raises
`AttributeError`: an accident of the implementation that an oracle then asserted. The evidence below is
what the body cannot do with any other type, so a parameter is given a type only when every use agrees.
"""

from __future__ import annotations

import ast
import textwrap

# Methods only `str` has among the builtin types a test would pass (bytes shares a few: not these).
STR_METHODS = frozenset({
    "lower", "upper", "casefold", "title", "capitalize", "swapcase", "isdigit", "isalpha", "isalnum", "isspace",
    "isupper", "islower", "isidentifier", "isnumeric", "isdecimal", "format", "format_map", "encode", "zfill",
    "removeprefix", "removesuffix", "expandtabs", "splitlines",
})
# Calls whose argument must be an int.
INT_ARG_CALLS = frozenset({"range", "chr", "bin", "oct", "hex"})


def _name(node: ast.AST) -> str | None:
    return node.id if isinstance(node, ast.Name) else None


def _number_kind(node: ast.AST) -> str | None:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    if isinstance(node, ast.Constant) and not isinstance(node.value, bool):
        if isinstance(node.value, int):
            return "int"
        if isinstance(node.value, float):
            return "float"
    return None


def _evidence(tree: ast.AST, params: set[str]) -> dict[str, set[str]]:
    seen: dict[str, set[str]] = {p: set() for p in params}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = _name(node.func.value)
            if owner in seen and node.func.attr in STR_METHODS:
                seen[owner].add("str")
        if isinstance(node, ast.Call) and _name(node.func) in INT_ARG_CALLS:
            for arg in node.args:
                if _name(arg) in seen:
                    seen[_name(arg)].add("int")
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Lt, ast.LtE, ast.Gt, ast.GtE)):
            # An ordering against a number: a str or a container would raise TypeError.
            left, right = node.left, node.comparators[0]
            for side, other in ((left, right), (right, left)):
                kind = _number_kind(other)
                if _name(side) in seen and kind:
                    seen[_name(side)].add(kind)
    return seen


def inferred_types(function_source: str, name: str, params: list[str]) -> dict[str, str]:
    """{parameter: "str" | "int" | "float"} for the parameters of `name` whose every typed use agrees."""
    try:
        tree = ast.parse(textwrap.dedent(function_source))
    except SyntaxError:
        return {}
    func = next((n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name),
                None)
    if func is None:
        return {}
    # A parameter the body rebinds is no longer the argument at every use.
    targets = [t for n in ast.walk(func) if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For))
               for t in (n.targets if isinstance(n, ast.Assign) else [n.target])]
    rebound = {name.id for t in targets for name in ast.walk(t) if isinstance(name, ast.Name)}
    out = {}
    for param, kinds in _evidence(func, set(params) - rebound).items():
        if kinds == {"int", "float"}:
            kinds = {"float"}
        if len(kinds) == 1:
            out[param] = next(iter(kinds))
    return out

"""Source excerpts the LLM oracle's prompt shows besides the function: imports, nearby code, how tests import.

All are read with `ast` from A's text, bounded in size, and empty (never an error) when the text does
not parse: the prompt loses some context, the run goes on.
"""

from __future__ import annotations

import ast

# Past these, a section is cut: the model needs orientation, not the whole module.
MAX_SECTION_CHARS = 6000
MAX_CLASS_LINES = 150
MAX_CONSTANT_LINES = 3  # a top-level assignment longer than this is data, not a threshold worth showing


def truncate(text: str, limit: int = MAX_SECTION_CHARS) -> str:
    """``text`` cut to ``limit`` characters at a line end, saying that it was cut."""
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit("\n", 1)[0]
    return f"{cut}\n# ... ({len(text) - len(cut)} more characters not shown)\n"


def _parse(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def _segment(source: str, node: ast.AST) -> str:
    return ast.get_source_segment(source, node, padded=True) or ""


def _span(lines: list[str], node: ast.stmt) -> str:
    """The lines of ``node`` with its decorators."""
    start = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
    return "".join(lines[start - 1: node.end_lineno])


def _header(lines: list[str], node: ast.stmt) -> str:
    """A def's or class's decorators, signature and docstring, with the body elided."""
    body = getattr(node, "body", [])
    keep = body[0] if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) else None
    start = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
    end = (keep.end_lineno if keep else body[0].lineno - 1) if body else node.end_lineno
    text = "".join(lines[start - 1: end])
    indent = " " * ((body[0].col_offset if body else node.col_offset + 4))
    return text + (f"{indent}...\n" if body and (keep is None or len(body) > 1) else "")


def module_imports(module_source: str) -> str:
    """The module's top-level import statements."""
    tree = _parse(module_source)
    if tree is None:
        return ""
    parts = [_segment(module_source, n).strip() for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    return truncate("\n".join(parts) + ("\n" if parts else ""))


def _find(body: list[ast.stmt], name: str) -> ast.stmt | None:
    found = None
    for node in body:  # the last definition wins, as at run time
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            found = node
    return found


def function_source(module_source: str, qualname: str) -> str:
    """The definition of ``qualname`` (decorators included) as written in the module; "" if not found."""
    tree = _parse(module_source)
    node: ast.stmt | None = None
    body = tree.body if tree is not None else []
    for name in qualname.split("."):
        node = _find(body, name)
        body = getattr(node, "body", [])
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return ""
    return truncate(_span(module_source.splitlines(keepends=True), node))


def nearby_code(module_source: str, qualname: str) -> str:
    """Code around the function: its class (whole when short, else header and ``__init__``) for a method;
    for a module function, the module's constants and the signatures of its other functions and classes."""
    tree = _parse(module_source)
    if tree is None:
        return ""
    lines = module_source.splitlines(keepends=True)
    parts = qualname.split(".")
    if len(parts) > 1:
        owner = _find(tree.body, parts[0])
        for name in parts[1:-1]:
            owner = _find(getattr(owner, "body", []), name) if owner is not None else None
        if not isinstance(owner, ast.ClassDef):
            return ""
        if owner.end_lineno - owner.lineno < MAX_CLASS_LINES:
            return truncate(_span(lines, owner))
        init = _find(owner.body, "__init__")
        return truncate(_header(lines, owner) + (_span(lines, init) if init is not None else ""))
    out = []
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.end_lineno - node.lineno < MAX_CONSTANT_LINES:
            out.append(_segment(module_source, node).strip() + "\n")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name != parts[0]:
            out.append("\n" + _header(lines, node))
    return truncate("".join(out).lstrip("\n"))


def imports_reaching(test_source: str | None, module: str) -> list[str]:
    """Import statements of an existing test that reach the module's top-level package."""
    tree = _parse(test_source or "")
    if tree is None:
        return []
    package = module.split(".")[0]
    found = []
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        if any(n == package or n.startswith(package + ".") for n in names):
            found.append(_segment(test_source or "", node).strip())
    return list(dict.fromkeys(found))

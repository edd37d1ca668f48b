"""Find the functions of a repository's package source that a test-writing task can be built on.

A task names one function that a test must import and exercise, so only functions reachable by an
import path qualify: module-level functions and methods of (nested) classes in importable package
source. Closures, test code, vendored or generated files and trivial bodies are skipped, and every skip
is counted by reason so a run can say why a repo yielded few functions.

We read files with the stdlib ``ast`` rather than libcst: extraction must visit every file of a repo,
``ast`` is many times faster, and its line numbers are the ones coverage.py measures (statement first
lines, the ``def`` line without decorators). libcst is kept for mutation, where formatting must survive.
"""

from __future__ import annotations

import ast
import io
import itertools
import keyword
import os
import re
import tokenize
from collections import Counter
from collections.abc import Iterator, Sequence
from enum import StrEnum
from pathlib import Path, PurePosixPath

from pydantic import BaseModel, ConfigDict, Field


class FunctionRecord(BaseModel):
    """One function a task can target, located in the repo and summarised for the instruction."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str = Field(description="POSIX path of the file relative to the repo root")
    module: str = Field(description="importable dotted module name, e.g. 'minicart.pricing'")
    qualname: str = Field(description="dotted name inside the module, e.g. 'Stock.reserve'")
    name: str = Field(description="the function's own name")
    class_name: str | None = Field(description="qualname of the enclosing class; None at module level")
    lineno: int = Field(description="1-based line of the `def` keyword (decorators excluded)")
    end_lineno: int = Field(description="1-based last line of the function")
    body_lines: list[int] = Field(
        description="first lines of the body's statements, docstring excluded: what coverage measures"
    )
    signature: str = Field(description="the def line as written, normalised to one line, no colon")
    docstring: str | None = Field(description="cleaned docstring, None when there is none")
    is_async: bool = Field(description="True for `async def`")
    decorators: list[str] = Field(description="source text of each decorator, without '@'")
    loc: int = Field(description="non-blank, non-comment body lines, docstring excluded")

    @property
    def key(self) -> str:
        """`path::qualname`: how the function is named in task.toml, reports and the per-function counts."""
        return f"{self.path}::{self.qualname}"


class TargetSkip(StrEnum):
    """Why a file or a function was not offered as a task target (keys of the skip counts)."""

    TEST_CODE = "test_code"
    VENDORED = "vendored"
    NOT_PACKAGE_SOURCE = "not_package_source"
    NOT_IMPORTABLE = "not_importable"
    UNREADABLE = "unreadable"
    GENERATED = "generated"
    SYNTAX_ERROR = "syntax_error"
    NESTED_IN_FUNCTION = "nested_in_function"
    LAMBDA = "lambda"
    TRIVIAL_BODY = "trivial_body"
    TOO_SHORT = "too_short"
    TOO_LONG = "too_long"


_TEST_DIRS = frozenset({"tests", "test", "testing"})
_VENDORED_DIRS = frozenset({"vendor", "_vendor", "third_party"})
# Never package source and possibly huge (virtualenvs, build trees): pruned without being read or counted.
_PRUNED_DIRS = frozenset({"build", "dist", "venv", "node_modules", "site-packages", "__pycache__"})
# Top-level names that are never the package even when they carry an __init__.py. A `tests/__init__.py`
# must not make a single-module library (xmltodict.py beside tests/) look like a repo with a package.
_NON_SOURCE_TOP = frozenset({
    "docs", "doc", "examples", "example", "benchmarks", "benchmark", "scripts", "tools",
    "setup.py", "conftest.py", "noxfile.py", "fabfile.py", "tasks.py", "versioneer.py",
    *_TEST_DIRS, *_VENDORED_DIRS,
})
_GENERATED_HEADER = re.compile(r"\bgenerated\b|do not edit", re.IGNORECASE)
# Statements and the clauses that hold statements (`except`, `case`): what a walk over blocks descends into.
_BLOCK_NODES = (ast.stmt, ast.excepthandler, ast.match_case)
_NOISE_TOKENS = frozenset(
    {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}
)


def _is_identifier(part: str) -> bool:
    return part.isidentifier() and not keyword.iskeyword(part)


def module_name_for(path: str, import_roots: Sequence[str] = ("src", "")) -> str | None:
    """Dotted module name of ``path`` under the first import root that contains it, or None.

    ``__init__.py`` names its package; a path with a part that is not an identifier is not importable.
    """
    p = PurePosixPath(path)
    if p.suffix != ".py":
        return None
    for root in import_roots:
        root_parts = PurePosixPath(root).parts if root else ()
        if p.parts[: len(root_parts)] != root_parts or len(p.parts) == len(root_parts):
            continue
        parts = [*p.parts[len(root_parts) : -1], p.stem]
        if parts[-1] == "__init__":
            parts.pop()
        if parts and all(_is_identifier(part) for part in parts):
            return ".".join(parts)
        return None
    return None


# --- extraction -------------------------------------------------------------------------------------


def _code_lines(source: str) -> set[int] | None:
    """Lines that hold a token other than a comment; None when the file does not tokenize."""
    lines: set[int] = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type not in _NOISE_TOKENS:
                lines.update(range(tok.start[0], tok.end[0] + 1))
    except (tokenize.TokenError, SyntaxError):
        return None
    return lines


def _signature(lines: list[str], node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """The header from `def` to its colon, comments dropped and whitespace collapsed to one line."""
    text = "".join(lines[node.lineno - 1 : node.end_lineno]).lstrip()
    out: list[str] = []
    prev_end: tuple[int, int] | None = None
    depth = 0
    try:
        tokens = list(itertools.takewhile(lambda t: t.type != tokenize.NEWLINE,
                                          tokenize.generate_tokens(io.StringIO(text).readline)))
    except (tokenize.TokenError, SyntaxError):  # cannot happen for a parsed def; keep a readable fallback
        returns = f" -> {ast.unparse(node.returns)}" if node.returns else ""
        prefix = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
        return f"{prefix} {node.name}({ast.unparse(node.args)}){returns}"
    for tok in tokens:
        if tok.type in (tokenize.COMMENT, tokenize.NL):
            continue
        if tok.string == ":" and depth == 0:
            break
        if tok.string in ")]}":
            depth -= 1
            if tok.string == ")" and depth == 0 and out and out[-1] == ",":
                out.pop()  # the magic trailing comma of a multi-line parameter list
        gap = prev_end is not None and tok.start != prev_end
        if gap and out and out[-1] not in ("(", "[", "{") and tok.string not in (")", "]", "}", ","):
            out.append(" ")
        out.append(tok.string)
        if tok.string in "([{":
            depth += 1
        prev_end = tok.end
    return "".join(out)


def _docstring_stmt(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)
    )


def _own_body(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> list[ast.stmt]:
    return node.body[1:] if node.body and _docstring_stmt(node.body[0]) else node.body


def _statement_lines(body: list[ast.stmt]) -> list[int]:
    """First lines of every statement in ``body``, recursively, minus nested docstrings (coverage skips them)."""
    found: set[int] = set()
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.lineno)
            stack.extend(_own_body(node))
            continue
        if isinstance(node, ast.stmt):
            found.add(node.lineno)
        stack.extend(child for child in ast.iter_child_nodes(node) if isinstance(child, _BLOCK_NODES))
    return sorted(found)


def _is_trivial(body: list[ast.stmt]) -> bool:
    """Only `pass`, `...`, `raise NotImplementedError` (or nothing after the docstring)."""

    def trivial(stmt: ast.stmt) -> bool:
        if isinstance(stmt, ast.Pass):
            return True
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and stmt.value.value is Ellipsis:
            return True
        if isinstance(stmt, ast.Raise) and stmt.exc is not None:
            exc = stmt.exc.func if isinstance(stmt.exc, ast.Call) else stmt.exc
            return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"
        return False

    return all(trivial(stmt) for stmt in body)


_FuncNode = ast.FunctionDef | ast.AsyncFunctionDef


def _walk_defs(
    node: ast.AST, prefix: str, class_name: str | None, nested: bool
) -> Iterator[tuple[_FuncNode, str, str | None, bool]]:
    """Yield (def, qualname, enclosing class, defined inside a function?) through compound statements."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            qualname = prefix + child.name
            yield child, qualname, class_name, nested
            yield from _walk_defs(child, qualname + ".<locals>.", None, True)
        elif isinstance(child, ast.ClassDef):
            qualname = prefix + child.name
            yield from _walk_defs(child, qualname + ".", qualname, nested)
        elif isinstance(child, _BLOCK_NODES):
            yield from _walk_defs(child, prefix, class_name, nested)


def _scan(
    source: str, tree: ast.Module, path: str, module: str
) -> tuple[list[tuple[FunctionRecord, list[ast.stmt]]], Counter[str]]:
    """(record, body without docstring) of each importable function of a parsed module, and skip counts."""
    lines = source.splitlines(keepends=True)
    code_lines = _code_lines(source)
    skipped: Counter[str] = Counter()
    skipped[TargetSkip.LAMBDA] += sum(isinstance(n, ast.Lambda) for n in ast.walk(tree))
    records = []
    for node, qualname, class_name, nested in _walk_defs(tree, "", None, False):
        if nested:
            skipped[TargetSkip.NESTED_IN_FUNCTION] += 1
            continue
        body = _own_body(node)
        end = node.end_lineno or node.lineno
        span = range(body[0].lineno, end + 1) if body else range(0)
        if code_lines is None:
            loc = sum(1 for n in span if lines[n - 1].strip() and not lines[n - 1].lstrip().startswith("#"))
        else:
            loc = sum(1 for n in span if n in code_lines)
        records.append((
            FunctionRecord(
                path=path,
                module=module,
                qualname=qualname,
                name=node.name,
                class_name=class_name,
                lineno=node.lineno,
                end_lineno=end,
                body_lines=_statement_lines(body),
                signature=_signature(lines, node),
                docstring=ast.get_docstring(node, clean=True),
                is_async=isinstance(node, ast.AsyncFunctionDef),
                decorators=[ast.get_source_segment(source, d) or ast.unparse(d) for d in node.decorator_list],
                loc=loc,
            ),
            body,
        ))
    return records, skipped


def extract_functions(source: str, path: str, module: str) -> list[FunctionRecord]:
    """Every function of ``source`` a test can import by qualname (closures excluded), in file order.

    Raises SyntaxError when ``source`` does not parse.
    """
    records, _ = _scan(source, ast.parse(source, filename=path), path, module)
    return sorted((record for record, _ in records), key=lambda r: r.lineno)


# --- discovery --------------------------------------------------------------------------------------


def _is_package(directory: Path) -> bool:
    return _is_identifier(directory.name) and (directory / "__init__.py").is_file()


def _source_units(repo_root: Path, import_roots: Sequence[str] | None) -> dict[PurePosixPath, str]:
    """Package dirs and single-module files that hold package source, each mapped to its import root."""

    def units_in(root: str, *, modules: bool) -> dict[PurePosixPath, str]:
        base = repo_root / root if root else repo_root
        if not base.is_dir():
            return {}
        found: dict[PurePosixPath, str] = {}
        for entry in sorted(base.iterdir()):
            if not root and entry.name in _NON_SOURCE_TOP:
                continue
            rel = PurePosixPath(entry.relative_to(repo_root).as_posix())
            if entry.is_dir() and _is_package(entry):
                found[rel] = root
            elif modules and entry.is_file() and entry.suffix == ".py" and entry.name not in _NON_SOURCE_TOP:
                found[rel] = root
        return found

    if import_roots is not None:
        units: dict[PurePosixPath, str] = {}
        for root in import_roots:
            units.update(units_in(root.strip("/"), modules=True))
        return units
    # src/ layout first, then top-level packages; single modules only when a repo has no package.
    for root in ("src", ""):
        units = units_in(root, modules=False)
        if units:
            return (units | units_in(root, modules=True)) if root else units
    return units_in("src", modules=True) or units_in("", modules=True)


def _file_skip_reason(rel: PurePosixPath, units: dict[PurePosixPath, str]) -> TargetSkip | None:
    name = rel.name
    dirs = rel.parts[:-1]
    if any(d in _TEST_DIRS for d in dirs) or name == "conftest.py" or name.startswith("test_") or (
        name.endswith("_test.py")
    ):
        return TargetSkip.TEST_CODE
    if any(d in _VENDORED_DIRS for d in dirs):
        return TargetSkip.VENDORED
    if not any(rel == unit or unit in rel.parents for unit in units):
        return TargetSkip.NOT_PACKAGE_SOURCE
    return None


def _unit_root(rel: PurePosixPath, units: dict[PurePosixPath, str]) -> str:
    return next(root for unit, root in units.items() if rel == unit or unit in rel.parents)


def _is_generated(source: str) -> bool:
    head = source.splitlines()[:5]
    return any(line.lstrip().startswith("#") and _GENERATED_HEADER.search(line) for line in head)


def _python_files(repo_root: Path) -> Iterator[PurePosixPath]:
    for dirpath, dirnames, filenames in os.walk(repo_root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in _PRUNED_DIRS)
        base = Path(dirpath)
        for filename in sorted(filenames):
            if filename.endswith(".py"):
                yield PurePosixPath((base / filename).relative_to(repo_root).as_posix())


def discover_functions(
    repo_root: Path,
    *,
    import_roots: Sequence[str] | None = None,
    min_loc: int = 2,
    max_loc: int = 80,
) -> tuple[list[FunctionRecord], dict[str, int]]:
    """Functions of the repo's package source that fit a task, sorted by (path, lineno), and skip counts.

    ``import_roots`` (repo-relative dirs, "" for the top level) overrides layout detection: `src/` when it
    holds a package, else top-level packages, else top-level single modules. File skips count files;
    function skips count functions (lambdas count every lambda in the files read).
    """
    repo_root = Path(repo_root)
    units = _source_units(repo_root, import_roots)
    skipped: Counter[str] = Counter()
    found: list[FunctionRecord] = []
    for rel in _python_files(repo_root):
        reason = _file_skip_reason(rel, units)
        module = None if reason else module_name_for(str(rel), (_unit_root(rel, units),))
        if reason is None and module is None:
            reason = TargetSkip.NOT_IMPORTABLE
        if reason is not None:
            skipped[reason] += 1
            continue
        try:
            with tokenize.open(repo_root / rel) as handle:  # honours a PEP 263 coding cookie
                source = handle.read()
        except (OSError, SyntaxError, UnicodeDecodeError):
            skipped[TargetSkip.UNREADABLE] += 1
            continue
        if _is_generated(source):
            skipped[TargetSkip.GENERATED] += 1
            continue
        try:
            tree = ast.parse(source, filename=str(rel))
        except (SyntaxError, ValueError, RecursionError):
            skipped[TargetSkip.SYNTAX_ERROR] += 1
            continue
        records, file_skips = _scan(source, tree, str(rel), module)
        skipped.update(file_skips)
        for record, body in records:
            if _is_trivial(body):
                skipped[TargetSkip.TRIVIAL_BODY] += 1
            elif record.loc < min_loc:
                skipped[TargetSkip.TOO_SHORT] += 1
            elif record.loc > max_loc:
                skipped[TargetSkip.TOO_LONG] += 1
            else:
                found.append(record)
    found.sort(key=lambda r: (r.path, r.lineno))
    return found, {str(reason): count for reason, count in sorted(skipped.items()) if count}

"""Values worth trying as inputs: constants the function compares against, and small grids per annotation.

Both feed `perturb`: the constants are the likeliest boundaries of a function's behaviour (a one-token
change to ``>=`` shows only at the constant itself), and the grids stand in for recorded values when the
existing tests never called the function.
"""

from __future__ import annotations

import ast
import itertools
import textwrap
from collections.abc import Callable
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field

from repo2rlenv.pipelines.test_synthesis.oracle.differential.values import Value, ValueKind, as_float, float_value

T = TypeVar("T")
MAX_LITERALS = 16
MAX_GRID = 12

_SEQUENCE_NAMES = {"list", "List", "Sequence", "MutableSequence", "Iterable", "Collection"}
_SET_NAMES = {"set", "Set", "frozenset", "FrozenSet", "AbstractSet", "MutableSet"}
_DICT_NAMES = {"dict", "Dict", "Mapping", "MutableMapping"}


class Literals(BaseModel):
    """Constants written in the function's body: the likeliest boundaries of its behaviour."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ints: list[int] = Field(default_factory=list)
    floats: list[float] = Field(default_factory=list)
    strs: list[str] = Field(default_factory=list)


def source_literals(function_source: str, name: str | None = None, constants: list[Value] | None = None) -> Literals:
    """Numbers (negatives included) and short strings in the function's body, docstring excluded, in order.

    ``function_source`` may hold more than the function (a whole module): the first function called
    ``name`` is read then. ``constants`` (values of module-level names the function reads) come after.
    """
    try:
        tree = ast.parse(textwrap.dedent(function_source))
    except SyntaxError:
        tree = ast.Module(body=[], type_ignores=[])
    functions = [
        n
        for n in ast.walk(tree)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and (name is None or n.name == name)
    ]
    # Only the body: defaults in the signature are what the recorded calls already use.
    roots: list[ast.AST] = list(functions[0].body) if functions else [tree]
    if roots and isinstance(roots[0], ast.Expr) and isinstance(_constant(roots[0].value), str):
        roots = roots[1:]
    skip: set[int] = set()
    nodes: list[ast.AST] = []
    for node in (n for root in roots for n in ast.walk(root)):
        body = getattr(node, "body", None)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and body and isinstance(body[0], ast.Expr):
            skip.add(id(body[0].value))
        if isinstance(node, ast.UnaryOp):
            skip.add(id(node.operand))  # read together with its sign
        if isinstance(node, (ast.Constant, ast.UnaryOp)):
            nodes.append(node)
    ints: list[int] = []
    floats: list[float] = []
    strs: list[str] = []
    for node in sorted(nodes, key=lambda n: (n.lineno, n.col_offset)):
        value = _constant(node)
        if id(node) in skip or isinstance(value, bool) or value is None:
            continue
        if isinstance(value, int) and value not in ints:
            ints.append(value)
        elif isinstance(value, float) and value not in floats:
            floats.append(value)
        elif isinstance(value, str) and len(value) <= 20 and value not in strs:
            strs.append(value)
    for const in constants or []:
        bucket = {ValueKind.INT: ints, ValueKind.FLOAT: floats, ValueKind.STR: strs}.get(const.t)
        item = as_float(const) if const.t is ValueKind.FLOAT else const.v
        if bucket is not None and item not in bucket:
            bucket.append(item)  # type: ignore[arg-type]
    return Literals(ints=ints[:MAX_LITERALS], floats=floats[:MAX_LITERALS], strs=strs[:MAX_LITERALS])


def _constant(node: ast.AST) -> object:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        inner = node.operand.value
        return -inner if isinstance(inner, (int, float)) and not isinstance(inner, bool) else None
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str)):
        return node.value
    return None


def int_value(v: int) -> Value:
    return Value(t=ValueKind.INT, v=v)


def unique(items: list[T], key: Callable[[T], str], seen: set[str] | None = None) -> list[T]:
    """``items`` without repeats (by ``key``, first kept); ``seen`` carries keys across calls."""
    seen = set() if seen is None else seen
    out = []
    for item in items:
        k = key(item)
        if k not in seen:
            seen.add(k)
            out.append(item)
    return out


def allows_none(annotation: str | None) -> bool:
    """Whether the annotation admits None at the top: ``Optional[X]``, ``X | None``, ``Union[X, None]``."""
    if not annotation:
        return False
    try:
        return _node_allows_none(ast.parse(annotation, mode="eval").body)
    except SyntaxError:
        return False


def _node_allows_none(node: ast.AST) -> bool:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _node_allows_none(node.left) or _node_allows_none(node.right)
    if isinstance(node, ast.Subscript):
        outer = _name(node.value)
        parts = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
        return outer == "Optional" or (outer == "Union" and any(_node_allows_none(p) for p in parts))
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return allows_none(node.value)
    return _name(node) == "None"


def annotation_grid(annotation: str | None, lits: Literals) -> list[Value]:
    """A few representative values of an annotated type (empty when the annotation is not understood)."""
    if not annotation:
        return []
    try:
        node = ast.parse(annotation, mode="eval").body
    except SyntaxError:
        return []
    grid = unique(_grid(node, lits, depth=0), Value.model_dump_json)
    none = [v for v in grid if v.t is ValueKind.NONE]
    if none and grid[0].t is not ValueKind.NONE:
        # None is the value an Optional most often mishandles: keep it inside the cut below.
        grid = [grid[0], none[0], *(v for v in grid[1:] if v.t is not ValueKind.NONE)]
    return grid[:MAX_GRID]


def _name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Constant) and node.value is None:
        return "None"
    return None


def scalar_grid(name: str, lits: Literals) -> list[Value]:
    makers: dict[str, Callable[[], list[Value]]] = {
        "int": lambda: [int_value(x) for x in [0, 1, -1, 2, *(y for b in lits.ints for y in (b - 1, b, b + 1))]],
        "float": lambda: [
            float_value(x) for x in [0.0, 1.0, -1.0, 0.5, *(float(b) for b in lits.floats + lits.ints)]
        ],
        "str": lambda: [Value(t=ValueKind.STR, v=s) for s in ["", "a", "abc", *lits.strs]],
        "bool": lambda: [Value(t=ValueKind.BOOL, v=False), Value(t=ValueKind.BOOL, v=True)],
        "bytes": lambda: [Value(t=ValueKind.BYTES, v=""), Value(t=ValueKind.BYTES, v="61")],
        "None": lambda: [Value(t=ValueKind.NONE)],
    }
    maker = makers.get(name)
    return maker() if maker else []


def _grid(node: ast.AST, lits: Literals, depth: int) -> list[Value]:
    if depth > 2:
        return []
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _grid(node.left, lits, depth) + _grid(node.right, lits, depth)
    if not isinstance(node, ast.Subscript):
        name = _name(node)
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:
                return _grid(ast.parse(node.value, mode="eval").body, lits, depth)
            except SyntaxError:
                return []
        return scalar_grid(name, lits) if name else []
    outer = _name(node.value)
    inner = node.slice
    parts = list(inner.elts) if isinstance(inner, ast.Tuple) else [inner]
    if outer == "Optional":
        return _grid(parts[0], lits, depth) + [Value(t=ValueKind.NONE)]
    if outer == "Union":
        return [v for p in parts for v in _grid(p, lits, depth)]
    sub = [_grid(p, lits, depth + 1)[:3] for p in parts]
    if outer in _SEQUENCE_NAMES or outer in _SET_NAMES:
        kind = ValueKind.LIST if outer in _SEQUENCE_NAMES else ValueKind.SET
        items = sub[0]
        shapes = [[], items[:1], items[:3], list(reversed(items[:3]))]
        return [Value(t=kind, items=s) for s in shapes] if items else []
    if outer in ("tuple", "Tuple"):
        if len(parts) == 2 and isinstance(parts[1], ast.Constant) and parts[1].value is Ellipsis:
            return [Value(t=ValueKind.TUPLE, items=s) for s in ([], sub[0][:1], sub[0][:3])]
        if all(sub):
            return [Value(t=ValueKind.TUPLE, items=list(combo)) for combo in itertools.islice(itertools.product(*sub), 6)]
        return []
    if outer in _DICT_NAMES and len(sub) == 2 and all(sub):
        return [Value(t=ValueKind.DICT, pairs=[]), Value(t=ValueKind.DICT, pairs=[(sub[0][0], sub[1][0])])]
    return []

"""The mutation-operator table, and the mutants of one function with the file's formatting kept intact.

A mutant is version B of a task: the module with one small behaviour change inside one function.
Operators form a table (name → `Operator`); simple swaps are data pairs. Each operator's rewriter looks at
one node and yields (site, replacement) pairs; each pair becomes one mutant, applied at that site only.

Deliberately never mutated, because such changes make weak or unfair tasks: string literals and f-strings
(messages), docstrings, decorators, parameter defaults and annotations, `raise` statements, `print` and
logger calls, assert messages and `if __name__ == "__main__"` blocks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Any

import libcst as cst
import libcst.matchers as m

from repo2rlenv.errors import Repo2RLEnvError


class MutationError(Repo2RLEnvError, ValueError):
    """A module that libcst cannot parse, an unknown operator, or a mutant that does not fit its source."""


class MutationKind(StrEnum):
    """The kind of behaviour change, recorded in task.toml (never shown to the agent)."""

    COMPARISON = "comparison"
    BOOLEAN = "boolean"
    ARITHMETIC = "arithmetic"
    OFF_BY_ONE = "off_by_one"
    CONDITION = "condition"
    RETURN_VALUE = "return_value"
    STATEMENT_REMOVAL = "statement_removal"


Rewrite = tuple[cst.CSTNode, cst.CSTNode]
"""(a node of the parsed tree, the node that replaces it)"""


@dataclass(frozen=True, slots=True)
class Operator:
    """One row of the operator table."""

    name: str
    kind: MutationKind
    description: str
    node_types: tuple[type[cst.CSTNode], ...]
    rewrites: Callable[[Any], Iterator[Rewrite]]


def _both_ways(pairs: Mapping[type, type]) -> Mapping[type, tuple[type, ...]]:
    return MappingProxyType({**{a: (b,) for a, b in pairs.items()}, **{b: (a,) for a, b in pairs.items()}})


_COMPARISON_SWAPS = _both_ways(
    {cst.LessThan: cst.LessThanEqual, cst.GreaterThan: cst.GreaterThanEqual, cst.Equal: cst.NotEqual,
     cst.Is: cst.IsNot, cst.In: cst.NotIn}
)
_BOOLEAN_SWAPS = _both_ways({cst.And: cst.Or})
_ARITHMETIC_SWAPS: Mapping[type, tuple[type, ...]] = MappingProxyType({
    cst.Add: (cst.Subtract,), cst.Subtract: (cst.Add,),
    cst.Multiply: (cst.Divide,), cst.Divide: (cst.Multiply, cst.FloorDivide), cst.FloorDivide: (cst.Divide,),
    cst.Modulo: (cst.FloorDivide,),
    cst.AddAssign: (cst.SubtractAssign,), cst.SubtractAssign: (cst.AddAssign,),
    cst.MultiplyAssign: (cst.DivideAssign,), cst.DivideAssign: (cst.MultiplyAssign, cst.FloorDivideAssign),
    cst.FloorDivideAssign: (cst.DivideAssign,), cst.ModuloAssign: (cst.FloorDivideAssign,),
})
TEXT_NODES = (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)
# Expressions that bind at least as tightly as `x + 1` needs, so `e + 1` means `(e) + 1` without parens.
_TIGHT = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Integer, cst.Float)
_TIGHT_BINARY_OPS = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.FloorDivide, cst.Modulo, cst.Power,
                     cst.MatrixMultiply)
_LOG_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical", "log"})


def _swap(token: Any, target: type) -> cst.CSTNode:
    """The same operator token, other symbol, same surrounding whitespace."""
    return target(whitespace_before=token.whitespace_before, whitespace_after=token.whitespace_after)


def _is_bool_literal(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Name) and node.value in ("True", "False")


def _is_not(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not)


def _is_int_literal(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Integer) or (
        isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus)
        and isinstance(node.expression, cst.Integer)
    )


def _parenthesized(expr: cst.BaseExpression, tight: bool) -> cst.BaseExpression:
    return expr if tight or expr.lpar else expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def _negate(expr: cst.BaseExpression) -> cst.BaseExpression:
    tight = isinstance(expr, (cst.Name, cst.Attribute, cst.Call, cst.Subscript))
    return cst.UnaryOperation(operator=cst.Not(), expression=_parenthesized(expr, tight))


def is_message_call(node: cst.CSTNode) -> bool:
    """`print(...)` or `<something log-ish>.info(...)`: output whose change makes a weak task."""
    if not isinstance(node, cst.Call):
        return False
    func = node.func
    if isinstance(func, cst.Name):
        return func.value == "print"
    if isinstance(func, cst.Attribute) and func.attr.value in _LOG_METHODS:
        receiver = func.value
        name = receiver.attr.value if isinstance(receiver, cst.Attribute) else getattr(receiver, "value", "")
        return isinstance(name, str) and "log" in name.lower()
    return False


def is_main_guard(node: cst.CSTNode) -> bool:
    return m.matches(node, m.If(test=m.Comparison(
        left=m.Name("__name__"), comparisons=[m.ComparisonTarget(comparator=m.SimpleString())])))


# --- rewriters: one node in, (site, replacement) pairs out ------------------------------------------------


def _comparison_flip(node: cst.Comparison) -> Iterator[Rewrite]:
    for target in node.comparisons:
        for new in _COMPARISON_SWAPS.get(type(target.operator), ()):
            yield target.operator, _swap(target.operator, new)


def _boolean_flip(node: cst.Name | cst.BooleanOperation | cst.UnaryOperation) -> Iterator[Rewrite]:
    if _is_bool_literal(node):
        yield node, node.with_changes(value="False" if node.value == "True" else "True")
    elif isinstance(node, cst.BooleanOperation):
        for new in _BOOLEAN_SWAPS[type(node.operator)]:
            yield node.operator, _swap(node.operator, new)
    elif _is_not(node):
        inner = node.expression  # keep parentheses written around the whole `not x`
        yield node, inner.with_changes(lpar=[*node.lpar, *inner.lpar], rpar=[*inner.rpar, *node.rpar])


def _arithmetic_swap(node: cst.BinaryOperation | cst.AugAssign) -> Iterator[Rewrite]:
    operands = (node.left, node.right) if isinstance(node, cst.BinaryOperation) else (node.value,)
    if any(isinstance(operand, TEXT_NODES) for operand in operands):
        return  # string concatenation or %-formatting: a message, not arithmetic
    for new in _ARITHMETIC_SWAPS.get(type(node.operator), ()):
        yield node.operator, _swap(node.operator, new)


def _int_literal(like: cst.Integer, value: int) -> cst.BaseExpression:
    """``value`` written in the base of ``like`` (a negative value becomes unary minus)."""
    fmt = {"0x": hex, "0o": oct, "0b": bin}.get(like.value[:2].lower(), str)
    if value >= 0:
        return like.with_changes(value=fmt(value))
    return cst.UnaryOperation(operator=cst.Minus(), expression=cst.Integer(fmt(-value)), lpar=like.lpar,
                              rpar=like.rpar)


def _shift_bound(expr: cst.BaseExpression) -> Iterator[Rewrite]:
    if _is_int_literal(expr):
        return  # the integer-literal rule already moves it
    tight = isinstance(expr, _TIGHT) or (
        isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, _TIGHT_BINARY_OPS))
    base = _parenthesized(expr, tight)
    for op in (cst.Add, cst.Subtract):
        yield expr, cst.BinaryOperation(left=base, operator=op(), right=cst.Integer("1"))


def _off_by_one(node: cst.Integer | cst.Call | cst.Subscript) -> Iterator[Rewrite]:
    if isinstance(node, cst.Integer):
        value = int(node.value, 0)
        for delta in (1, -1):
            yield node, _int_literal(node, value + delta)
    elif isinstance(node, cst.Call):
        args = node.args
        if m.matches(node.func, m.Name("range")) and all(a.keyword is None and not a.star for a in args):
            for arg in args[:2]:  # start and stop, never the step
                yield from _shift_bound(arg.value)
    else:
        for element in node.slice:
            if isinstance(element.slice, cst.Slice):
                for bound in (element.slice.lower, element.slice.upper):
                    if bound is not None:
                        yield from _shift_bound(bound)


def _condition_negation(node: cst.If | cst.While | cst.IfExp | cst.CompIf) -> Iterator[Rewrite]:
    if not (_is_not(node.test) or _is_bool_literal(node.test)):  # boolean_flip covers those
        yield node.test, _negate(node.test)


def _return_value(node: cst.Return) -> Iterator[Rewrite]:
    value = node.value
    if value is None or m.matches(value, m.Name("None")) or _is_not(value):
        return  # nothing to change, or boolean_flip already drops the `not`
    if _is_bool_literal(value):
        new: cst.BaseExpression = value.with_changes(value="False" if value.value == "True" else "True")
    elif isinstance(value, cst.Integer):
        new = value.with_changes(value="1" if int(value.value, 0) == 0 else "0")
    elif isinstance(value, cst.Comparison):
        new = _negate(value)
    else:
        new = cst.Name("None")
    space = node.whitespace_after_return
    if isinstance(space, cst.SimpleWhitespace) and not space.value:  # `return(x)` → `return None`
        space = cst.SimpleWhitespace(" ")
    yield node, node.with_changes(value=new, whitespace_after_return=space)


def _statement_removal(node: cst.Assign | cst.AnnAssign | cst.AugAssign | cst.Expr | cst.Del) -> Iterator[Rewrite]:
    # Assignments to plain names are never removed, so no local can end up undefined; a walrus anywhere
    # in the statement would bind a name too, so such statements are kept.
    if isinstance(node, cst.Assign):
        removable = all(isinstance(t.target, (cst.Attribute, cst.Subscript)) for t in node.targets)
    elif isinstance(node, cst.AnnAssign):
        removable = node.value is not None and isinstance(node.target, (cst.Attribute, cst.Subscript))
    elif isinstance(node, cst.Expr):
        call = node.value.expression if isinstance(node.value, cst.Await) else node.value
        removable = isinstance(call, cst.Call) and not is_message_call(call)
    else:  # AugAssign reads its target first, Del only unbinds: neither can leave a name undefined
        removable = True
    if removable and not m.findall(node, m.NamedExpr()):
        yield node, cst.Pass(semicolon=node.semicolon)


OPERATOR_LIST: tuple[Operator, ...] = (
    Operator("comparison_flip", MutationKind.COMPARISON,
             "< ↔ <=, > ↔ >=, == ↔ !=, is ↔ is not, in ↔ not in",
             (cst.Comparison,), _comparison_flip),
    Operator("boolean_flip", MutationKind.BOOLEAN,
             "True ↔ False literals, and ↔ or, `not x` → `x`",
             (cst.Name, cst.BooleanOperation, cst.UnaryOperation), _boolean_flip),
    Operator("arithmetic_swap", MutationKind.ARITHMETIC,
             "+ ↔ -, * ↔ /, // ↔ /, % → //, and the augmented forms (+= ↔ -= …); not on string operands",
             (cst.BinaryOperation, cst.AugAssign), _arithmetic_swap),
    Operator("off_by_one", MutationKind.OFF_BY_ONE,
             "integer literal n → n+1 and n-1; non-literal range() start/stop and slice bounds e → e + 1, e - 1",
             (cst.Integer, cst.Call, cst.Subscript), _off_by_one),
    Operator("condition_negation", MutationKind.CONDITION,
             "the test c of if/elif, while, ternaries and comprehension filters → not c",
             (cst.If, cst.While, cst.IfExp, cst.CompIf), _condition_negation),
    Operator("return_value", MutationKind.RETURN_VALUE,
             "return True ↔ False; return 0 → 1, other int literal → 0; return <comparison> → not (…); "
             "any other value → None (bare return, return None and return not x are left alone)",
             (cst.Return,), _return_value),
    Operator("statement_removal", MutationKind.STATEMENT_REMOVAL,
             "attribute/subscript assignment, augmented assignment, call statement or del → pass",
             (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.Expr, cst.Del), _statement_removal),
)
OPERATORS: Mapping[str, Operator] = MappingProxyType({op.name: op for op in OPERATOR_LIST})

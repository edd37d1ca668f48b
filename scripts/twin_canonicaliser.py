"""How many twins a fixed normaliser maps back to A, per twin kind (issue 31, item 5).

An attacker who could read a changed function's code would not compare it with A directly (the twins
move every structural fact) but normalise first. These are such normalisers, written without the twin's
edit list: they work on the function's AST only (what the bytecode holds too; comments, blank lines and
spaces are gone already). Three levels, each a superset of the one before:

  basic    drops `pass`, `None is not None and …` statements and unread stores of a constant; folds
           `x = e; return x` into `return e`, `if not (c): <nothing> else: X` into `if c: X`,
           `(name, k, …)[0]` into `name`; renames locals by order of first appearance (the first
           canonicaliser, before the opaque kind);
  folding  what a determined attacker writes without reading the twin maker: a flow-sensitive
           interpreter over small sets of values (constants, `is` tests, arithmetic, conditional
           expressions, lists as fresh objects; loops iterated to a fixed point, then widened), which
           removes every `if`/`while` whose test takes one truth value, then removes pure statements and
           stores nothing live reads, repeated until nothing changes;
  paths    folding once per combination of the values of the function's identity tests (`p is None`,
           `p is q`): two tests written alike take one value on a path, which relates the variables they
           choose between (what a relational or path-sensitive analysis knows);
  aware    what an attacker who has read the twin maker adds: "shadow" locals (only ever bound to ints
           computed from constants, other shadows and `is` tests, or to fresh lists) are the twin's; every
           `if`/`while` whose test reads shadows only (parameters only through `is`) is dropped whole.

For every task given (a dataset's tasks dir, or task dirs) it makes N twins of A and of B per kind (each
kind alone, as the verifier would with only that kind on, and all together) and reports, per level, how
many normalise equal to A. A kind resists a level when its A′ stay ≠ A; B′ must never be ≡ A (else the
normaliser is wrong, not the kind good).

    python3 scripts/twin_canonicaliser.py DATASET_OR_TASK_DIR [...] [--twins 50] [--levels basic,folding,aware]
"""

from __future__ import annotations

import argparse
import ast
import copy
import io
import itertools
import operator
import random
import sys
import tarfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from repo2rlenv.verifiers.config_model import VerifierConfig  # noqa: E402
from repo2rlenv.verifiers.test_synthesis import verifier_patch as vpatch  # noqa: E402
from repo2rlenv.verifiers.test_synthesis import verifier_twins as vtwins  # noqa: E402

_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
_SCOPES = (*_FUNCS, ast.ClassDef, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
LEVELS = ("basic", "folding", "paths", "aware")


# --------------------------------------------------------------------------- basic (the first normaliser)

class Unwrap(ast.NodeTransformer):
    """`(name, k, …)[0]` → `name`: the wrap kind undone."""

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        value, key = node.value, node.slice
        if isinstance(value, ast.Tuple) and value.elts and isinstance(key, ast.Constant) and key.value == 0 \
                and all(isinstance(e, ast.Constant) for e in value.elts[1:]):
            return self.visit(value.elts[0])
        return self.generic_visit(node)


class Basic(Unwrap):
    """The first normaliser (see the module docstring)."""

    def __init__(self, fn: ast.AST):
        loads = Counter(n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load))
        self.unread = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
                       and not loads[n.id]}
        self.once = {name for name, count in loads.items() if count == 1}
        self.params = {a.arg for a in ast.walk(fn.args) if isinstance(a, ast.arg)}  # type: ignore[attr-defined]
        self.names: dict[str, str] = {}

    def _body(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        out, i = [], 0
        while i < len(stmts):
            stmt, nxt = stmts[i], stmts[i + 1] if i + 1 < len(stmts) else None
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                    and stmt.targets[0].id in self.once and isinstance(nxt, ast.Return) \
                    and isinstance(nxt.value, ast.Name) and nxt.value.id == stmt.targets[0].id:
                out.append(ast.Return(value=stmt.value))
                i += 2
                continue
            if isinstance(stmt, ast.Pass):
                i += 1
                continue
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.BoolOp) and isinstance(stmt.value.op, ast.And) \
                    and isinstance(stmt.value.values[0], ast.Compare) \
                    and all(isinstance(x, ast.Constant) and x.value is None
                            for x in (stmt.value.values[0].left, *stmt.value.values[0].comparators)):
                i += 1
                continue
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                    and stmt.targets[0].id in self.unread and isinstance(stmt.value, ast.Constant):
                i += 1
                continue
            out.append(stmt)
            i += 1
        return out

    def generic_visit(self, node: ast.AST) -> ast.AST:
        for name in ("body", "orelse", "finalbody"):
            value = getattr(node, name, None)
            if isinstance(value, list) and (not value or isinstance(value[0], ast.stmt)):
                setattr(node, name, self._body(value))
        super().generic_visit(node)
        if isinstance(node, ast.If) and not node.body and isinstance(node.test, ast.UnaryOp) \
                and isinstance(node.test.op, ast.Not):
            node.test, node.body, node.orelse = node.test.operand, node.orelse, []
        return node

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id not in self.params and (isinstance(node.ctx, ast.Store) or node.id in self.names):
            node.id = self.names.setdefault(node.id, f"v{len(self.names)}")
        return node


# --------------------------------------------------------------------------- folding: small sets of values

TOP = None  # "any value"
CAP = 64  # the largest set a name may hold before it is any value
ROUNDS = 8  # loop iterations before widening


class Fresh:
    """The object a list display makes: equal only to itself."""

    def __init__(self, node: ast.AST):
        self.node = node


_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
           ast.Mod: operator.mod, ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.BitXor: operator.xor,
           ast.LShift: operator.lshift, ast.RShift: operator.rshift, ast.Pow: operator.pow}
_CMPS = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
         ast.GtE: operator.ge, ast.Is: operator.is_, ast.IsNot: operator.is_not}
_UNARY = {ast.Not: operator.not_, ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert}


def _product(op, left, right):
    if left is TOP or right is TOP or len(left) * len(right) > CAP * CAP:
        return TOP
    try:
        out = frozenset(op(a, b) for a in left for b in right)
    except Exception:  # noqa: BLE001 — a value the folder cannot compute is any value
        return TOP
    return out if len(out) <= CAP else TOP


def _truths(values) -> frozenset | None:
    if values is TOP:
        return TOP
    try:
        return frozenset(bool(v) for v in values)
    except Exception:  # noqa: BLE001
        return TOP


class Folder:
    """Evaluates a function's own statements over sets of values and records, for every `if`/`while` test,
    the truth values it can take (in the last, stable pass)."""

    def __init__(self, aware: bool = False, assume: dict[str, bool] | None = None):
        self.decided: dict[int, frozenset | None] = {}
        self.record = False
        self.aware = aware
        self.assume = assume or {}  # identity tests (by dump) taken to have one value on this path

    # ---- expressions
    def eval(self, node: ast.expr, env: dict):
        if isinstance(node, ast.Constant):
            try:
                return frozenset({node.value})
            except TypeError:
                return TOP
        if isinstance(node, ast.Name):
            return env.get(node.id, TOP)
        if isinstance(node, ast.List):
            return frozenset({Fresh(node)})
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            operand = self.eval(node.operand, env)
            if isinstance(node.op, ast.Not):
                truths = _truths(operand)
                return TOP if truths is TOP else frozenset(not t for t in truths)
            return _product(lambda a, _: _UNARY[type(node.op)](a), operand, frozenset({0}))
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            op = _BINOPS[type(node.op)]
            if isinstance(node.op, (ast.Pow, ast.LShift)):
                op = _bounded(op)
            return _product(op, self.eval(node.left, env), self.eval(node.right, env))
        if isinstance(node, ast.Compare):
            return self._compare(node, env)
        if isinstance(node, ast.BoolOp):
            return self._boolop(node, env)
        if isinstance(node, ast.IfExp):
            truths = _truths(self.eval(node.test, env))
            if truths is TOP:
                truths = frozenset({True, False})
            parts = [self.eval(b, env) for t, b in ((True, node.body), (False, node.orelse)) if t in truths]
            return _union(*parts)
        return TOP

    def _compare(self, node: ast.Compare, env: dict):
        if self.assume:
            fixed = self.assume.get(ast.dump(node))
            if fixed is not None:
                return frozenset({fixed})
        left = self.eval(node.left, env)
        result = frozenset({True})
        for op, right_node in zip(node.ops, node.comparators):
            right = self.eval(right_node, env)
            if type(op) not in _CMPS:
                return TOP
            if left is TOP or right is TOP:
                step = self._unknown_identity(op, left, right)
            else:
                step = _product(_CMPS[type(op)], left, right)
            result = _product(lambda a, b: a and b, result, step if step is not TOP else frozenset({True, False}))
            left = right
        return result

    def _unknown_identity(self, op: ast.cmpop, left, right):
        """`x is y` with one side unknown: either, unless (aware) the other is a list the function made, which
        nothing from outside can be."""
        if self.aware and isinstance(op, (ast.Is, ast.IsNot)):
            known = left if left is not TOP else right
            if known is not TOP and known and all(isinstance(v, Fresh) for v in known):
                return frozenset({isinstance(op, ast.IsNot)})
        return frozenset({True, False})

    def _boolop(self, node: ast.BoolOp, env: dict):
        is_and = isinstance(node.op, ast.And)
        results: list = []
        for value in node.values:
            values = self.eval(value, env)
            if values is TOP:
                return TOP
            stop = frozenset(v for v in values if bool(v) is not is_and)  # values that end the chain
            results.append(stop)
            if not any(bool(v) is is_and for v in values):
                return _union(*results)
        results.append(values)
        return _union(*results)

    # ---- statements
    def run(self, stmts: list[ast.stmt], env: dict) -> dict:
        for stmt in stmts:
            env = self.step(stmt, env)
        return env

    def step(self, stmt: ast.stmt, env: dict) -> dict:
        env = dict(env)
        pairs = _parallel(stmt)
        if pairs is not None:  # `a, b = e1, e2` evaluates both before binding either
            values = [self.eval(value, env) for _, value in pairs]
            env.update((name, value) for (name, _), value in zip(pairs, values))
        elif isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
            expr = ast.BinOp(left=ast.Name(id=stmt.target.id, ctx=ast.Load()), op=stmt.op, right=stmt.value)
            env[stmt.target.id] = self.eval(expr, env)
        elif isinstance(stmt, ast.If):
            truths = self._test(stmt, env)
            branches = [self.run(body, env) for t, body in ((True, stmt.body), (False, stmt.orelse)) if t in truths]
            env = _join(*branches)
        elif isinstance(stmt, (ast.While, ast.For, ast.AsyncFor)):
            env = self._loop(stmt, env)
        elif isinstance(stmt, (ast.Try, getattr(ast, "TryStar", ast.Try))):
            after = self.run(stmt.body, env)
            handler_env = _forget(_join(env, after), stmt.body)
            ends = [self.run(stmt.orelse, after)] + [self.run(h.body, handler_env) for h in stmt.handlers]
            env = self.run(stmt.finalbody, _join(*ends))
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            env = self.run(stmt.body, _forget(env, [stmt]))
        else:
            env = _forget(env, [stmt])
        return env

    def _test(self, stmt: ast.If | ast.While, env: dict) -> frozenset:
        truths = _truths(self.eval(stmt.test, env))
        truths = frozenset({True, False}) if truths is TOP else truths
        if self.record:
            self.decided[id(stmt)] = _union(self.decided.get(id(stmt), frozenset()), truths)
        return truths

    def _loop(self, stmt, env: dict) -> dict:
        record, self.record = self.record, False
        head = _forget(env, [stmt.target]) if isinstance(stmt, (ast.For, ast.AsyncFor)) else env
        for round_ in range(ROUNDS + 1):
            end = self._iteration(stmt, head)
            new_head = _join(head, end)
            if new_head == head:
                break
            head = new_head if round_ < ROUNDS else _widen(head, new_head)
        self.record = record
        self._iteration(stmt, head)  # the stable pass, recording its tests
        if isinstance(stmt, ast.While):
            truths = self._test(stmt, head)
            if True not in truths:
                return self.run(stmt.orelse, head)
        return self.run(stmt.orelse, head)

    def _iteration(self, stmt, head: dict) -> dict:
        if isinstance(stmt, ast.While):
            if True not in self._test(stmt, head):
                return head
        return self.run(stmt.body, head)


def _parallel(stmt: ast.stmt) -> list[tuple[str, ast.expr]] | None:
    """[(name, value)] of `x = e` or `x, y = e1, e2` (names only), else None."""
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
        return None
    target, value = stmt.targets[0], stmt.value
    if isinstance(target, ast.Name):
        return [(target.id, value)]
    if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts) \
            and all(isinstance(e, ast.Name) for e in target.elts):
        return [(e.id, v) for e, v in zip(target.elts, value.elts)]  # type: ignore[attr-defined]
    return None


def _bounded(op):
    def run(a, b):
        if isinstance(b, int) and b > 64:
            raise OverflowError
        return op(a, b)
    return run


def _union(*parts):
    if any(p is TOP for p in parts):
        return TOP
    out = frozenset().union(*parts)
    return out if len(out) <= CAP else TOP


def _join(*envs: dict) -> dict:
    if not envs:
        return {}
    names = set().union(*envs)
    return {n: _union(*(e[n] for e in envs if n in e)) for n in names}


def _widen(old: dict, new: dict) -> dict:
    return {n: (v if old.get(n, v) == v else TOP) for n, v in new.items()}


def _forget(env: dict, stmts: list[ast.AST]) -> dict:
    """`env` without every name the statements may bind (outside nested scopes)."""
    env = dict(env)
    for stmt in stmts:
        for node in _own_walk(stmt):
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                env[node.id] = TOP
            elif isinstance(node, (*_FUNCS, ast.ClassDef)):
                env[node.name] = TOP
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    env[alias.asname or alias.name.split(".")[0]] = TOP
            elif isinstance(node, ast.ExceptHandler) and node.name:
                env[node.name] = TOP
    return env


def _own_walk(node: ast.AST):
    """`node` and what is under it, nested scopes' insides excluded."""
    stack = [node]
    while stack:
        item = stack.pop()
        yield item
        if item is not node and isinstance(item, _SCOPES):
            continue
        stack.extend(ast.iter_child_nodes(item))


def _prune(stmts: list[ast.stmt], decided: dict) -> list[ast.stmt]:
    """The statements with every `if` whose test took one truth value replaced by its taken branch, and every
    `while` whose test was never true by its `else`."""
    out: list[ast.stmt] = []
    for stmt in stmts:
        truths = decided.get(id(stmt))
        if isinstance(stmt, ast.If) and truths is not None and len(truths) == 1:
            out += _prune(stmt.body if True in truths else stmt.orelse, decided)
            continue
        if isinstance(stmt, ast.While) and truths is not None and True not in truths:
            out += _prune(stmt.orelse, decided)
            continue
        for name in ("body", "orelse", "finalbody"):
            value = getattr(stmt, name, None)
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt) and not isinstance(stmt, _FUNCS):
                setattr(stmt, name, _prune(value, decided) or [ast.Pass()])
        for handler in getattr(stmt, "handlers", None) or []:
            handler.body = _prune(handler.body, decided) or [ast.Pass()]
        out.append(stmt)
    return out


def fold(fn: ast.FunctionDef | ast.AsyncFunctionDef, *, aware: bool = False, paths: bool = False) -> None:
    """Prunes the branches no path takes. With `paths`, once per combination of the values of the function's
    identity tests between names (`p is None`, `p is q`, at most 2**PATH_TESTS combinations): two tests
    written alike take the same value on a path, which relates what the seeds bind (a folder that looks at
    one variable at a time loses that)."""
    tests = sorted({ast.dump(n) for n in _own_walk(fn) if _identity_test(n)}) if paths else []
    combos = [{}] if not tests or len(tests) > PATH_TESTS else \
        [dict(zip(tests, bits)) for bits in itertools.product((False, True), repeat=len(tests))]
    decided: dict[int, frozenset] = {}
    for assume in combos:
        folder = Folder(aware, assume)
        folder.record = True
        folder.run(fn.body, {})
        for key, truths in folder.decided.items():
            decided[key] = _union(decided.get(key, frozenset()), truths)
    fn.body = _prune(fn.body, decided) or [ast.Pass()]


PATH_TESTS = 8


def _identity_test(node: ast.AST) -> bool:
    return isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Is, ast.IsNot)) \
        and all(isinstance(x, ast.Name) or (isinstance(x, ast.Constant) and x.value is None)
                for x in (node.left, *node.comparators))


# --------------------------------------------------------------------------- dead stores

def _pure(node: ast.AST) -> bool:
    """An expression an attacker takes to have no effect: constants, names, displays, operators."""
    return all(isinstance(n, (ast.Constant, ast.Name, ast.Load, ast.Tuple, ast.List, ast.Set, ast.BinOp, ast.UnaryOp,
                              ast.BoolOp, ast.Compare, ast.IfExp, ast.operator, ast.unaryop, ast.boolop, ast.cmpop))
               for n in ast.walk(node))


def _pure_store(stmt: ast.stmt) -> list[str] | None:
    """The names a pure store binds (`x = e`, `x, y = e1, e2`, `x op= e`, e pure), or None."""
    pairs = _parallel(stmt)
    if pairs is not None and all(_pure(value) for _, value in pairs):
        return [name for name, _ in pairs]
    if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name) and _pure(stmt.value):
        return [stmt.target.id]
    return None


def drop_dead_stores(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
    """Removes pure expression statements and pure stores to names nothing live reads (a name is live when
    a statement other than a pure store reads it, or a pure store to a live name does)."""
    stores: dict[str, list[ast.stmt]] = {}
    binds: dict[int, list[str]] = {}
    for node in _own_walk(fn):
        if isinstance(node, ast.stmt) and node is not fn:
            names = _pure_store(node)
            if names is not None:
                binds[id(node)] = names
                for name in names:
                    stores.setdefault(name, []).append(node)
    live = _reads_outside(fn, set(binds))  # nested scopes' reads included
    changed = True
    while changed:
        changed = False
        for name in list(live):
            for stmt in stores.get(name, []):
                for read in (n.id for n in ast.walk(stmt.value) if isinstance(n, ast.Name)):  # type: ignore[attr-defined]
                    if read not in live:
                        live.add(read)
                        changed = True
    dead = {key for key, names in binds.items() if not set(names) & live}
    _remove(fn, lambda s: id(s) in dead or (isinstance(s, ast.Expr) and _pure(s.value)) or isinstance(s, ast.Pass))


def _reads_outside(fn: ast.AST, skip: set[int]) -> set[str]:
    reads: set[str] = set()
    stack = list(ast.iter_child_nodes(fn))
    while stack:
        node = stack.pop()
        if id(node) in skip:
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            reads.add(node.id)
        stack.extend(ast.iter_child_nodes(node))
    return reads


def _remove(node: ast.AST, doomed) -> None:
    for child in ast.walk(node):
        if isinstance(child, _FUNCS) and child is not node:
            continue
        for name in ("body", "orelse", "finalbody"):
            value = getattr(child, name, None)
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                kept = [s for s in value if not doomed(s)]
                setattr(child, name, kept if kept or name != "body" else [ast.Pass()])
        for handler in getattr(child, "handlers", None) or []:
            handler.body = [s for s in handler.body if not doomed(s)] or [ast.Pass()]


# --------------------------------------------------------------------------- aware: the twin's shadows

def _shadow_expr(node: ast.AST, shadows: set[str]) -> bool:
    """Built from int constants, shadows and `is` tests of anything."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int)
    if isinstance(node, ast.Name):
        return node.id in shadows
    if isinstance(node, ast.Compare) and all(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
        return True
    if isinstance(node, ast.List):
        return all(isinstance(e, ast.Constant) for e in node.elts)
    if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.IfExp, ast.Compare)):
        return all(_shadow_expr(c, shadows) for c in ast.iter_child_nodes(node)
                   if not isinstance(c, (ast.operator, ast.unaryop, ast.boolop, ast.cmpop)))
    return False


def drop_shadows(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
    """Finds the shadow locals (every binding of them a shadow expression) and drops every `if`/`while`
    whose test reads nothing but shadows (and parameters inside `is` tests)."""
    bindings: dict[str, list[ast.AST]] = {}
    plainly: set[int] = set()  # the Name nodes bound by `x = e`, `x, y = e1, e2` or `x op= e`
    for node in _own_walk(fn):
        pairs = _parallel(node) if isinstance(node, ast.stmt) else None
        if pairs is not None:
            targets = node.targets[0].elts if isinstance(node.targets[0], ast.Tuple) else node.targets  # type: ignore[attr-defined]
            plainly |= {id(t) for t in targets}
            for name, value in pairs:
                bindings.setdefault(name, []).append(value)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            plainly.add(id(node.target))
            bindings.setdefault(node.target.id, []).append(node.value)
    plain = set(bindings) - {a.arg for a in ast.walk(fn.args) if isinstance(a, ast.arg)}  # the call binds those
    for node in _own_walk(fn):  # a name also bound by for/with/other unpacking is no shadow
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load) and id(node) not in plainly:
            plain.discard(node.id)
    shadows = set(plain)
    changed = True
    while changed:
        changed = False
        for name in list(shadows):
            if not all(_shadow_expr(v, shadows) for v in bindings[name]):
                shadows.discard(name)
                changed = True
    if shadows:
        _remove(fn, lambda s: isinstance(s, (ast.If, ast.While)) and _shadow_test(s.test, shadows))


def _shadow_test(test: ast.expr, shadows: set[str]) -> bool:
    names = {n.id for n in ast.walk(test) if isinstance(n, ast.Name)}
    return bool(names & shadows) and _shadow_expr(test, shadows)


# --------------------------------------------------------------------------- normal forms

def _find(tree: ast.Module, qualname: str) -> ast.AST | None:
    scope: list[ast.stmt] = tree.body
    node = None
    for part in qualname.split("."):
        node = next((n for n in scope if isinstance(n, (*_FUNCS, ast.ClassDef)) and n.name == part), None)
        if node is None:
            return None
        scope = node.body
    return node if isinstance(node, _FUNCS) else None


def normalise(fn: ast.FunctionDef | ast.AsyncFunctionDef, level: str) -> str:
    fn = copy.deepcopy(fn)
    if level != "basic":
        for _ in range(6):
            before = ast.dump(fn)
            fn = _unwrap(fn)  # first: the folder and the shadow finder would see a tuple
            if level == "aware":
                drop_shadows(fn)
            fold(fn, aware=level == "aware", paths=level in ("paths", "aware"))
            drop_dead_stores(fn)
            fn = Basic(fn).visit(fn)
            fn.body = fn.body or [ast.Pass()]
            if ast.dump(fn) == before:
                break
    else:
        fn = Basic(fn).visit(fn)
    return ast.dump(fn, include_attributes=False)


def _unwrap(fn: ast.AST) -> ast.AST:
    """Undo names read as `(name, k…)[0]` before anything else (Basic does it too, but last)."""
    return Unwrap().visit(fn)


def normal_form(source: str, qualname: str, level: str = "folding") -> str | None:
    """The normal form of the function `qualname` of `source` (None when it is not found)."""
    fn = _find(ast.parse(source), qualname)
    return None if fn is None else normalise(fn, level)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- the count

def _read_a(task: Path, cfg: VerifierConfig, path: str) -> str | None:
    """A's text of `path`: from the task's workspace, else from its pristine archive."""
    on_disk = task / "environment" / "repo" / path
    if on_disk.is_file():
        return on_disk.read_text(encoding="utf-8")
    archive = task / "tests" / (cfg.pristine_archive or "")
    if not archive.is_file():
        return None
    with tarfile.open(archive) as tar:
        try:
            member = tar.extractfile(path)
        except KeyError:
            return None
        return None if member is None else io.TextIOWrapper(member, encoding="utf-8").read()


def task_sources(task: Path) -> list[tuple[str, str, str]]:
    """(path, A's text, B's text) of every Python file the task's hidden change touches."""
    cfg = VerifierConfig.model_validate_json((task / "tests" / "verifier_config.json").read_text())
    diff = (task / "tests" / cfg.variants.broken).read_text()
    paths = [p for p in vpatch.touched_paths(diff) if p.endswith(".py")]
    a_files = {p: t for p in paths if (t := _read_a(task, cfg, p)) is not None}
    if set(a_files) != set(paths):
        return []
    b_files = vpatch.apply_diff(diff, a_files)
    return [(p, a_files[p], b_files.get(p, a_files[p]) or "") for p in paths]


def _normal_units(source: str, qualnames: list[str], level: str) -> tuple[str | None, ...]:
    return tuple(normal_form(source, q, level) for q in qualnames)


def count(tasks: list[Path], twins: int, levels: tuple[str, ...]) -> dict[str, Counter]:
    """Per kind: twins made of each side, and those whose every changed function normalises as A's."""
    rows: dict[str, Counter] = {kind: Counter() for kind in (*vtwins.KINDS, "all")}
    rng = random.Random(0)
    for task in tasks:
        for path, a_text, b_text in task_sources(task):
            plan = vtwins.plan_file(path, [a_text, b_text])
            qualnames = [u.qualname.rstrip("'") for u in plan.units[0]]
            if not qualnames:
                continue
            a_normal = {level: _normal_units(a_text, qualnames, level) for level in levels}
            for kind in rows:
                kinds = frozenset(vtwins.KINDS) if kind == "all" else frozenset({kind})
                for side, text, units, refs in (("A′", a_text, plan.units[0], plan.references[0]),
                                                 ("B′", b_text, plan.units[1], plan.references[1])):
                    for _ in range(twins):
                        twin = vtwins.twin_source(text, units, refs, rng=rng, kinds=kinds)
                        rows[kind][side] += 1
                        for level in levels:
                            if _normal_units(twin, qualnames, level) == a_normal[level]:
                                rows[kind][(side, level)] += 1
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--twins", type=int, default=50)
    parser.add_argument("--levels", default=",".join(LEVELS))
    args = parser.parse_args()
    levels = tuple(level for level in args.levels.split(",") if level)
    if set(levels) - set(LEVELS):
        parser.error(f"levels are {', '.join(LEVELS)}")
    tasks = []
    for path in args.paths:
        tasks += [p for p in sorted(path.glob("*")) if (p / "tests" / "verifier_config.json").is_file()] \
            if not (path / "tests").is_dir() else [path]
    rows = count(tasks, args.twins, levels)
    print(f"{len(tasks)} task(s), {args.twins} twins per side and kind; twins each normaliser maps back to A "
          f"(A′ ≡ A: the kind adds no defence against it; B′ ≡ A must stay 0):")
    header = "".join(f" {level + ' A′≡A':>16} {level + ' B′≡A':>16}" for level in levels)
    print(f"{'kind':12}{header}")
    for kind, c in rows.items():
        cells = "".join(f" {c[('A′', level)]:>9}/{c['A′']:<6} {c[('B′', level)]:>9}/{c['B′']:<6}" for level in levels)
        print(f"{kind:12}{cells}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

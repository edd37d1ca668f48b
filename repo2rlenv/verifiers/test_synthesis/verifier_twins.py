"""Twins: behaviour-preserving rewrites of A and of B, drawn anew for every grading (A′ and B′).

Why. A test can tell A from B without testing behaviour by pinning a fact of the code's structure that
B's change moves: the function's bytecode or constants, line numbers, columns, instruction offsets, the
module's size or text, its pyc bytes, the reference counts of the constants and names it holds. So the
verifier grades, next to A itself, several rewrites of A (A′) that must all pass and several rewrites
of B (B′) that must all fail, each made from a fresh seed by the same random process. A pin computed on
A fails on A′, because its fact moved; a pin that accepts "anything that looks rewritten" accepts B′ as
well. Only behaviour tells A′ from B′. (Reading the rewritten code itself is the runtime guard's
business: `verifier_guard` refuses it.)

What a twin changes. Files: the ones the variants change. Units: the outermost functions (and methods)
whose code differs between the variants. Every kind below is an insertion into the original text, or
the replacement of a local name's token; nothing is reformatted, and string literals (docstrings
included) are never touched:
- padding: blank and comment lines before statements anywhere in the file (its size, text, and the
  line numbers of everything after);
- neutral statements in units (`pass`, a constant stored to a fresh local) at the top of a body and at
  random statement boundaries (bytecode, instruction offsets, constants, locals); and at the top of a
  body, one store of a list of lists of random lengths, 0 to 4 in every size band of the graded runs'
  one-time heap (`_LANE_ITEMS`): what one call allocates, in every lane, moves from twin to twin (under
  the heap, where addresses only grow, two `id()`s a call apart count its allocations exactly);
- `return e` → `fresh = e` / `return fresh`;
- `if c:` without an else → `if not (c): pass` / `else:` (jumps and their order);
- locals renamed to fresh names;
- extra spaces between tokens of a unit's lines (columns, hence code positions);
- most names read inside a statement → `(name, k…)[0]` (instruction offsets *within* a statement: between
  two callbacks of one expression, which no statement-level insertion moves);
- one statement `None is not None and (k1, k2, …)`, in every twin, that references the constants and
  identifier strings the other variants' code objects hold more often than this one's (plus noise), so
  that every variant references each of them equally often (reference counts; whether a string is
  interned);
- opaque guards (`opaque`): pairs of fresh int locals seeded at the top of a unit's functions from the
  identity of a parameter and stepped at the top of every loop, and one to three `if`/`while`/`elif`/
  `else` statements over decoy code that never runs, each guarded by a predicate whose value is fixed by
  an invariant of a pair (their difference ≡ gap mod m) but not by either variable alone (see `_Guards`).

Why `opaque`: every other kind is undone by about a hundred lines of AST rewriting that knows nothing of
this module (drop `pass` and unread stores, fold `x = e; return x`, undo `not`, number the locals), so a
test that could read the code could compare it with A. A guard is removed only by proving its predicate
constant: a folder tracking each variable's values alone leaves it undecided; one that also follows the
identity tests path by path solves guards before loops, not in or after them; only an attacker who knows
this module's generator strips them all (`scripts/twin_canonicaliser.py` measures each level). That is
defence in depth: reading the code is the barrier's to refuse (`verifier_guard`).

Each kind keeps behaviour by construction: the inserted statements bind only fresh names, never in a
function that looks at its own locals (`locals()`, `eval`, frames …); `fresh = e; return fresh`
evaluates the same expression at the same point; `not` takes the same truth value the `if` would;
renamed locals are plain locals of that function alone (not parameters, not declared global/nonlocal,
not seen by any nested scope); spaces, comments and blank lines between tokens are not code; a guard's
predicate reads only its fresh ints and parameters compared by `is`, so it calls, raises and looks up
nothing, and its value never lets the decoys run (whose stores name only the function's own locals, so
no scope changes). On top of that every rewritten unit is checked: parsed again, with the inserted
statements removed (a guard only as the exact statement planned), inversions and renames undone, its
AST must equal the original's; a unit failing the check keeps its original text.

Stdlib only; copied verbatim into every task.
"""

from __future__ import annotations

import ast
import functools
import io
import keyword
import random
import re
import tokenize
import types
from collections import Counter
from dataclasses import dataclass, field

# What a twin may do; the emitter can switch kinds off for a task (e.g. `padding` for a module that
# reads its own source) and records which it checked.
KINDS = ("padding", "neutral", "return_temp", "invert_if", "rename", "jitter", "references", "wrap", "opaque")
# List lengths whose item arrays fall in each lane of the one-time heap (r2e_heap.h `heap_lane_max`: a
# block of 32, 48, 64, 80, 112, 144, 272 bytes with its 16-byte header, then the large lane): 8 bytes a
# pointer, so n items take a block of 8n + 16 rounded up to 16.
_LANE_ITEMS = ((1, 2), (3, 4), (5, 6), (7, 8), (9, 12), (13, 16), (17, 32), (33, 64))
# Lists per band in one twin's allocation: 0 in one twin of five, so each lane moves in four of five.
_LANE_LISTS = (0, 4)
# A function that can observe its own locals by name keeps its locals: no renames, no new locals.
_INTROSPECTIVE_NAMES = frozenset({"locals", "vars", "dir", "eval", "exec", "_getframe", "currentframe",
                                  "f_locals", "f_back", "stack", "getframeinfo", "getouterframes"})
_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.ListComp, ast.SetComp,
           ast.DictComp, ast.GeneratorExp)
_WORDS = ("note", "see", "keep", "value", "state", "order", "check", "case", "edge", "item", "count",
          "result", "input", "limit", "step", "path", "part", "data", "size", "first", "last", "next")
_HEADER_REST = re.compile(r"^[\s)]*:\s*(#.*)?$")
_CODING = re.compile(r"^[ \t\f]*#.*?coding[:=]")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_WORD = re.compile(r"[^\W\d]\w*")


_NEVER = ast.dump(ast.parse("None is not None", mode="eval").body, annotate_fields=False, include_attributes=False)


class TwinError(Exception):
    """A file cannot be twinned (it does not parse or compile)."""


# --------------------------------------------------------------------------- the source and its units

@dataclass(frozen=True, slots=True)
class Unit:
    """One outermost changed function of a file, as it appears in one variant's text."""

    qualname: str
    first: int  # first line (its first decorator's), 1-based
    last: int  # last line
    indent: str  # the whitespace before its first line's code


def _statements(node: ast.AST):
    """Every statement under `node`, through statement lists only (expressions hold no statements; a
    170 KB module has some 60 000 nodes but a few thousand statements)."""
    for body in _statement_lists(node):
        for i, stmt in enumerate(body):
            yield body, i, stmt
            yield from _statements(stmt)


def _qualnames(tree: ast.Module) -> dict[str, tuple[ast.AST, list[str]]]:
    """{qualname: (function node, qualnames of its enclosing functions)} for every function."""
    found: dict[str, tuple[ast.AST, list[str]]] = {}

    def walk(node: ast.AST, prefix: str, funcs: list[str]) -> None:
        for body in _statement_lists(node):
            for child in body:
                if isinstance(child, _FUNCS):
                    name = f"{prefix}{child.name}"
                    while name in found:  # a redefinition: keep both, distinguishable
                        name += "'"
                    found[name] = (child, list(funcs))
                    walk(child, f"{name}.<locals>.", [*funcs, name])
                elif isinstance(child, ast.ClassDef):
                    walk(child, f"{prefix}{child.name}.", funcs)
                else:
                    walk(child, prefix, funcs)

    walk(tree, "", [])
    return found


def _dump(node: ast.AST) -> str:
    return ast.dump(node, annotate_fields=False, include_attributes=False)


def _first_line(node: ast.AST) -> int:
    decorators = getattr(node, "decorator_list", None) or []
    return min([node.lineno, *(d.lineno for d in decorators)])  # type: ignore[attr-defined]


def _unit_text(lines: tuple[str, ...], node: ast.AST) -> str:
    return "".join(lines[_first_line(node) - 1: node.end_lineno])  # type: ignore[attr-defined]


def changed_units(sources: list[str]) -> list[list[Unit]]:
    """For each source (the variants of one file), its outermost functions whose text differs between
    the variants, in the same order for every source (a function missing from a variant is left out
    of that variant's list). Text, not the AST: a function whose only change is a comment is twinned
    too, which costs nothing, and comparing text is what keeps planning a 170 KB module fast."""
    analyses = [_analysis(s) for s in sources]
    maps = [a[4] for a in analyses]
    names = sorted(set().union(*maps))
    changed = {q for q in names if len({_unit_text(a[2], m[q][0]) if q in m else None
                                        for a, m in zip(analyses, maps)}) > 1}
    outer = [q for q in names if q in changed and not any(
        p in changed for m in maps if q in m for p in m[q][1])]
    units = []
    for (_, _, lines, _, mapping) in analyses:
        mine = []
        for q in outer:
            if q in mapping:
                node = mapping[q][0]
                first = _first_line(node)
                line = lines[first - 1]
                stripped = line.lstrip()
                mine.append(Unit(q, first, node.end_lineno, line[: len(line) - len(stripped)]))
        units.append(mine)
    return units


# --------------------------------------------------------------------------- reference counts

def _code_refs(code: types.CodeType, counts: Counter) -> None:
    """Count what `code` and its nested code objects reference: constants (inside constant tuples too)
    and identifier strings (names, locals, the code's own name)."""
    def const(value: object) -> None:
        if isinstance(value, types.CodeType):
            _code_refs(value, counts)
        elif isinstance(value, (tuple, frozenset)):
            for item in value:
                const(item)
        elif _literal(value) is not None:
            counts[(type(value), value)] += 1

    for value in code.co_consts:
        const(value)
    names = [*code.co_names, *code.co_varnames, *code.co_cellvars, *code.co_freevars, code.co_name]
    for name in names:
        if _IDENTIFIER.match(name):
            counts[(str, name)] += 1


def _literal(value: object) -> str | None:
    """Source text that evaluates to an equal constant of the same type, or None."""
    if value is None or value is Ellipsis or isinstance(value, (bool, int, str, bytes)):
        return "..." if value is Ellipsis else repr(value)
    if isinstance(value, float):
        return repr(value) if value == value and abs(value) != float("inf") else None
    if isinstance(value, complex):
        return repr(value) if value.real == 0 and value.imag == value.imag and abs(value.imag) != float("inf") \
            else None
    return None


def reference_counts(source: str, units: list[Unit] | None = None) -> Counter:
    """How often the code objects of `source` (of its `units` only, when given) reference each constant
    and identifier string."""
    counts: Counter = Counter()
    try:
        if units is None:
            _code_refs(compile(source, "<twin>", "exec", dont_inherit=True), counts)
            return counts
        lines = _analysis(source)[2]
        for unit in units:
            text = "".join(lines[unit.first - 1: unit.last])
            _code_refs(compile(f"class _Unit:\n{text}" if unit.indent else text, "<twin>", "exec",
                               dont_inherit=True), counts)
    except (SyntaxError, ValueError) as exc:
        raise TwinError(f"does not compile: {exc}") from None
    return counts


def _outside_units(source: str, units: list[Unit]) -> str:
    """The source with its units' lines blanked: what the module-level code is, minus them."""
    lines = list(_analysis(source)[2])
    for unit in units:
        for i in range(unit.first - 1, unit.last):
            lines[i] = "\n"
    return "".join(lines)


def missing_references(sources: list[str], units: list[list[Unit]] | None = None) -> list[Counter]:
    """For each variant of a file, the references it must add so that every variant references each
    constant and identifier string as often as the one that references it most. Only the changed
    units count (the rest is the same in every variant), unless the code outside them differs too."""
    if units is None:
        counts = [reference_counts(s) for s in sources]
    else:
        counts = [reference_counts(s, u) for s, u in zip(sources, units)]
        outside = [_outside_units(s, u) for s, u in zip(sources, units)]
        if len(set(outside)) > 1:  # module-level code differs as well: count all of it
            counts = [reference_counts(s) for s in sources]
    keys = set().union(*counts)
    top = {k: max(c[k] for c in counts) for k in keys}
    return [Counter({k: top[k] - c[k] for k in keys if top[k] > c[k]}) for c in counts]


# --------------------------------------------------------------------------- edits on the original text

@dataclass(slots=True)
class Edits:
    """Insertions and token replacements keyed by original positions (1-based lines, character cols)."""

    inline: list[tuple[int, int, int, str]] = field(default_factory=list)  # (line, col, end col, text)
    before: dict[int, list[str]] = field(default_factory=dict)  # lines inserted before a line
    after: dict[int, list[str]] = field(default_factory=dict)  # lines inserted after a line

    def insert_before(self, line: int, text: str) -> None:
        self.before.setdefault(line, []).append(text)

    def insert_after(self, line: int, text: str) -> None:
        self.after.setdefault(line, []).append(text)

    def merge(self, other: "Edits") -> None:
        self.inline += other.inline
        for line, texts in other.before.items():
            self.before.setdefault(line, []).extend(texts)
        for line, texts in other.after.items():
            self.after.setdefault(line, []).extend(texts)

    def apply(self, lines: list[str]) -> list[str]:
        """The edited lines (each with its own line ending)."""
        out = list(lines)
        by_line: dict[int, list[tuple[int, int, str]]] = {}
        for line, col, end, text in self.inline:
            by_line.setdefault(line, []).append((col, end, text))
        for line, items in by_line.items():
            text = out[line - 1]
            # Right to left; at one column the replacement goes first, so what is inserted there precedes it.
            for col, end, new in sorted(items, key=lambda i: (i[0], i[1] > i[0]), reverse=True):
                text = text[:col] + new + text[end:]
            out[line - 1] = text
        result: list[str] = []
        for number, text in enumerate(out, 1):
            result.extend(f"{t}\n" for t in self.before.get(number, []))
            result.append(text)
            if number in self.after:
                if not text.endswith("\n"):
                    result[-1] = text + "\n"
                result.extend(f"{t}\n" for t in self.after[number])
        return result


def _char_col(line: str, byte_col: int) -> int:
    """ast columns count UTF-8 bytes; the edits count characters."""
    return len(line.encode("utf-8")[:byte_col].decode("utf-8", "replace"))


def _starts_line(lines: list[str], node: ast.AST) -> bool:
    line = lines[node.lineno - 1]
    return not line[: _char_col(line, node.col_offset)].strip()


def _statement_lists(node: ast.AST) -> list[list[ast.stmt]]:
    lists = []
    for name in ("body", "orelse", "finalbody"):
        value = getattr(node, name, None)
        if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
            lists.append(value)
    for handler in getattr(node, "handlers", None) or []:
        lists.append(handler.body)
    for case in getattr(node, "cases", None) or []:
        lists.append(case.body)
    return lists


def _own_statements(fn: ast.AST) -> list[tuple[list[ast.stmt], int]]:
    """(statement list, index) of every statement in `fn`'s own scope (nested functions and classes are
    not descended into: they are scopes of their own)."""
    found = []

    def walk(node: ast.AST) -> None:
        for body in _statement_lists(node):
            for i, stmt in enumerate(body):
                found.append((body, i))
                if not isinstance(stmt, (*_FUNCS, ast.ClassDef)):
                    walk(stmt)

    walk(fn)
    return found


# The facts below are asked of the same function by every twin of a grading (the trees are `_analysis`'s,
# shared), several times each: computed once per function node.
@functools.lru_cache(maxsize=4096)
def _own_nodes(fn: ast.AST) -> tuple[ast.AST, ...]:
    """Every node of `fn`'s own scope, nested scopes (and everything inside them) excluded."""
    found = []
    stack = list(ast.iter_child_nodes(fn))
    while stack:
        node = stack.pop()
        if isinstance(node, _SCOPES):
            continue
        found.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return tuple(found)


@functools.lru_cache(maxsize=4096)
def _nested_names(fn: ast.AST) -> frozenset[str]:
    """Names that appear anywhere inside the nested scopes of `fn` (with their decorators, defaults …)."""
    names: set[str] = set()
    stack = list(ast.iter_child_nodes(fn))
    while stack:
        node = stack.pop()
        if isinstance(node, _SCOPES):
            names.update(n.id for n in ast.walk(node) if isinstance(n, ast.Name))
            names.update(a.arg for n in ast.walk(node) if isinstance(n, ast.arguments)
                         for a in [*n.posonlyargs, *n.args, *n.kwonlyargs, n.vararg, n.kwarg] if a is not None)
            continue
        stack.extend(ast.iter_child_nodes(node))
    return frozenset(names)


@functools.lru_cache(maxsize=4096)
def _introspective(fn: ast.AST) -> bool:
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and node.id in _INTROSPECTIVE_NAMES:
            return True
        if isinstance(node, ast.Attribute) and node.attr in _INTROSPECTIVE_NAMES:
            return True
        if isinstance(node, ast.Match):
            return True
    return False


def _other_bindings(fn: ast.AST) -> set[str]:
    """Names `fn`'s own scope binds other than by a plain name: except-as, imports, and the functions and
    classes it defines (at any depth of its blocks, not only at its top)."""
    own = _own_nodes(fn)
    names = {n.name for n in own if isinstance(n, ast.ExceptHandler) and n.name}
    names |= {a.asname or a.name.split(".")[0] for n in own if isinstance(n, (ast.Import, ast.ImportFrom))
              for a in n.names}
    names |= {body[i].name for body, i in _own_statements(fn) if isinstance(body[i], (*_FUNCS, ast.ClassDef))}
    return names


@functools.lru_cache(maxsize=4096)
def _plain_locals(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> frozenset[str]:
    """Locals of `fn` that may be renamed: bound by plain name in its own scope, nowhere else."""
    own = _own_nodes(fn)
    declared = {n for node in own if isinstance(node, (ast.Global, ast.Nonlocal)) for n in node.names}
    bound = {n.id for n in own if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del))}
    excluded = set(_params(fn)) | declared | _other_bindings(fn) | _nested_names(fn)
    return frozenset(n for n in bound if not n.startswith("__") and n not in excluded)


# --------------------------------------------------------------------------- opaque guards

# Guard variables come in pairs whose difference is always ≡ gap (mod modulus), while each alone takes
# values that depend on the identity of a parameter and on how often loops ran: a folder that tracks each
# variable's values alone (constants, sets of values, intervals, even residues of each) finds the
# predicates undecided; only a relation between the two decides them. Powers of two let `& (m - 1)` stand
# for `% m`.
_MODULI = (3, 4, 5, 7, 8, 9, 11, 13, 16)
_COMPARE = {"==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
            "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}
_MIRROR = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_DECOY_OPS = ("+", "-", "*", "//", "%", "|", "&")
_INDENT = "    "


@dataclass(frozen=True, slots=True)
class _Invariant:
    """`high - low ≡ gap (mod modulus)` holds from the seeds on."""

    low: str
    high: str
    modulus: int
    gap: int


class _Guards:
    """The opaque guards of one function of one twin: `if P:` (or `while P:`, `if Q: … else:`, an `elif`
    chain) over decoy statements that never run, P a predicate whose value is fixed by an invariant of its
    variables that no look at one variable at a time reveals.

    Why it keeps behaviour: a predicate reads only the guard variables (ints the twin alone binds and
    steps) and parameters compared by `is` with None, with each other, or with a list the twin made after
    the call (so never the same object); ring operations, `%`/`&` by a positive constant and comparisons
    of ints call nothing of anyone's, raise nothing and look up no name. The decoys never run; they read
    and store only the function's own locals and parameters (already in its `co_varnames`) and fresh
    names, so they bind no new name in any other scope, and what they call or subscript is never reached.
    No `return`, `yield`, `await`, `break`, `continue`, walrus or literal that a compiler warns about."""

    def __init__(self, rng: random.Random, fresh, params: list[str], stable: list[str], plain: list[str]):
        self.rng, self.fresh = rng, fresh
        self.params, self.stable, self.plain = params, stable, plain
        self.vars: list[_Invariant] = []
        self.idents: list[tuple[str, str]] = []  # (parameter, a list made by the twin)

    # ---- statements
    def seeds(self) -> list[str]:
        """The statements at the top of the body that bind the guard variables (and the lists)."""
        rng, out = self.rng, []
        for _ in range(1 if rng.random() < 0.7 else 2):  # each pair costs every call two stores
            m = rng.choice(_MODULI)
            inv = _Invariant(self.fresh(), self.fresh(), m, rng.randrange(m))
            self.vars.append(inv)
            out.append(self._seed_pair(inv))
        if self.stable and rng.random() < 0.5:
            obj = self.fresh()
            out.append([f"{obj} = [{rng.randint(0, 99)}]"])
            self.idents += [(p, obj) for p in rng.sample(self.stable, min(2, len(self.stable)))]
        rng.shuffle(out)  # independent groups: any order
        return [line for group in out for line in group]

    def _seed_pair(self, inv: _Invariant) -> list[str]:
        """Both variables take values chosen by one identity test, the two choices ≢ (mod m) apart, their
        difference ≡ gap on either; or the second is the first plus the gap."""
        rng, m = self.rng, inv.modulus
        on_true = rng.randint(-500, 9000)
        on_false = on_true + rng.choice([k for k in range(-m * 40, m * 40) if k % m])
        test = self._test()
        low = self._binding(inv.low, on_true, on_false, test)
        gaps = [inv.gap + m * rng.randint(-40, 400) for _ in range(2)]
        if test is not None and rng.random() < 0.6:
            return [low, self._binding(inv.high, on_true + gaps[0], on_false + gaps[1], test)]
        return [low, rng.choice((f"{inv.high} = {inv.low} + {gaps[0]}", f"{inv.high} = {gaps[0]} + {inv.low}"))]

    def _test(self) -> str | None:
        if not self.params:
            return None
        rng = self.rng
        p, q = rng.choice(self.params), rng.choice(self.params)
        return rng.choice((f"{p} is None", f"{p} is not None", f"{p} is {q}" if p != q else f"{p} is None"))

    def _binding(self, name: str, on_true: int, on_false: int, test: str | None) -> str:
        if test is None:
            return f"{name} = {on_true}"
        return self.rng.choice((f"{name} = {on_true} if {test} else {on_false}",
                                f"{name} = {on_false} + {on_true - on_false} * ({test})",
                                f"{name} = ({test}) * {on_true - on_false} + {on_false}"))

    def step(self) -> str:
        """A statement for the top of a loop's body: moves guard variables, keeping their invariant."""
        rng = self.rng
        inv = rng.choice(self.vars)
        m = inv.modulus
        one = rng.choice((inv.low, inv.high))
        shift, big, free = m * rng.randint(1, 300), m * rng.randint(2, 4000), rng.randint(-999, 999)
        return rng.choice((f"{one} += {shift}", f"{one} -= {shift}", f"{one} = ({one} + {shift}) % {big}",
                           f"{inv.high} = {inv.low} + {inv.gap + m * rng.randint(-40, 400)}",
                           f"{inv.low}, {inv.high} = {inv.low} + {free}, {inv.high} + {free}"))

    def guard(self) -> list[str]:
        """The lines of one guard statement (relative indentation)."""
        rng = self.rng
        decoy = [_INDENT + s for s in self._decoy()]
        live = _INDENT + (f"{self.fresh()} = {rng.randint(0, 999)}" if rng.random() < 0.3 else "pass")
        form = rng.randrange(5)
        if form == 0:
            return [f"if {self.predicate(False)}:", *decoy]
        if form == 1:
            return [f"if {self.predicate(True)}:", live, "else:", *decoy]
        if form == 2:
            return [f"while {self.predicate(False)}:", *decoy]
        if form == 3:
            return [f"if {self.predicate(False)}:", *decoy, f"elif {self.predicate(False)}:",
                    *(_INDENT + s for s in self._decoy())]
        return [f"if {self.predicate(True)}:", live, f"elif {self.predicate(rng.random() < 0.5)}:", *decoy]

    # ---- predicates
    def predicate(self, truth: bool, depth: int | None = None) -> str:
        rng = self.rng
        if depth is None:  # mostly shallow: a guard in a loop runs its predicate every iteration
            depth = rng.choice((0, 1, 1, 2))
        pick = rng.random() if depth else 1.0
        if pick < 0.15:
            return f"not ({self.predicate(not truth, depth - 1)})"
        if pick < 0.4:  # and: true when both are; false when either is (the other may be anything)
            left, right = (True, True) if truth else rng.choice(((False, rng.random() < 0.5), (True, False)))
            return f"({self.predicate(left, depth - 1)}) and ({self.predicate(right, depth - 1)})"
        if pick < 0.65:
            left, right = (False, False) if not truth else rng.choice(((True, rng.random() < 0.5), (False, True)))
            return f"({self.predicate(left, depth - 1)}) or ({self.predicate(right, depth - 1)})"
        return self._atom(truth)

    def _atom(self, truth: bool) -> str:
        rng = self.rng
        if self.idents and rng.random() < 0.25:
            p, obj = rng.choice(self.idents)
            return f"{p} is not {obj}" if truth else f"{p} is {obj}"
        inv = rng.choice(self.vars)
        text, value = self._ring(inv, 2)
        while inv.low not in text:  # a constant alone would fold
            text, value = self._ring(inv, 2)
        m = inv.modulus
        lhs = f"({text} & {m - 1})" if m & (m - 1) == 0 and rng.random() < 0.5 else f"{text} % {m}"
        w = value % m  # what lhs is, whatever the variables hold
        op, v = ("==", w) if truth else ("!=", w)
        for _ in range(12):
            op, v = rng.choice(tuple(_COMPARE)), rng.randint(-1, m)
            if _COMPARE[op](w, v) == truth:
                break
        else:
            op, v = ("==", w) if truth else ("!=", w)
        return f"{lhs} {op} {v}" if rng.random() < 0.7 else f"{v} {_MIRROR[op]} {lhs}"

    def _ring(self, inv: _Invariant, depth: int) -> tuple[str, int]:
        """A polynomial (+, -, * and int constants) in the difference of the pair, written in one of a few
        ways, and its value when the difference is the gap: its value modulo the modulus, always."""
        rng = self.rng
        if depth == 0 or rng.random() < 0.3:
            if rng.random() < 0.35:
                c = rng.randint(0, 99)
                return str(c), c
            lo, hi, gap, c = inv.low, inv.high, inv.gap, rng.randint(2, 9)
            return rng.choice(((f"({hi} - {lo})", gap), (f"({lo} - {hi})", -gap), (f"({hi} + {c} - {lo})", gap + c),
                               (f"({c} * {hi} - {c} * {lo})", c * gap), (f"({lo} * {c} - {hi} * {c})", -c * gap)))
        (lt, lv), (rt, rv) = self._ring(inv, depth - 1), self._ring(inv, depth - 1)
        op = rng.choice("+-*")
        return f"({lt} {op} {rt})", {"+": lv + rv, "-": lv - rv, "*": lv * rv}[op]

    # ---- decoys: never run
    def _decoy(self) -> list[str]:
        rng, out = self.rng, []
        for _ in range(rng.randint(1, 3)):
            pick = rng.random()
            if pick < 0.45 or not self._readable():
                target = rng.choice(self.plain) if self.plain and rng.random() < 0.6 else self.fresh()
                out.append(f"{target} = {self._expr(2)}")
            elif pick < 0.6 and self.plain:
                out.append(f"{rng.choice(self.plain)} {rng.choice(_DECOY_OPS)}= {self._expr(1)}")
            else:
                args = ", ".join(self._expr(1) for _ in range(rng.randint(0, 2)))
                out.append(f"{rng.choice(self._readable())}({args})")
        return out

    def _readable(self) -> list[str]:
        return [*self.params, *self.plain, *(n for v in self.vars for n in (v.low, v.high))]

    def _expr(self, depth: int) -> str:
        rng, names = self.rng, self._readable()
        pick = rng.random()
        if depth == 0 or pick < 0.35 or not names:
            return rng.choice(names) if names and rng.random() < 0.7 else str(rng.randint(0, 99))
        if pick < 0.65:
            return f"{self._expr(depth - 1)} {rng.choice(_DECOY_OPS)} {self._expr(depth - 1)}"
        if pick < 0.8:
            return f"{rng.choice(names)}[{self._expr(depth - 1)}]"
        if pick < 0.92:
            return f"{rng.choice(names)}({self._expr(depth - 1)})"
        return f"({self._expr(depth - 1)}, {self._expr(depth - 1)})"


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    args = fn.args
    return [a.arg for a in [*args.posonlyargs, *args.args, args.vararg, *args.kwonlyargs, args.kwarg] if a]


@functools.lru_cache(maxsize=4096)
def _stable_params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[str, ...]:
    """Parameters nothing rebinds (not in the function's own scope, not from a nested one): each holds the
    object it was called with, which cannot be a list the twin makes after the call."""
    own = _own_nodes(fn)
    bound = {n.id for n in own if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    bound |= {n for node in own if isinstance(node, (ast.Global, ast.Nonlocal)) for n in node.names}
    bound |= _other_bindings(fn)
    return tuple(p for p in _params(fn) if p not in bound and p not in _nested_names(fn))


# --------------------------------------------------------------------------- one twin of one file

@functools.lru_cache(maxsize=16)
def _analysis(source: str) -> tuple[ast.Module, frozenset[str], tuple[str, ...], tuple[tuple[int, str], ...],
                                    dict[str, tuple[ast.AST, list[str]]]]:
    """(tree, every identifier of the file, its lines, padding spots, functions by qualname): made once
    per grading, not once per twin (and before the copy builder forks, which then shares them)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError) as exc:
        raise TwinError(f"does not parse: {exc}") from None
    # Every word of the text, strings and comments included: a superset of its identifiers, found
    # without walking the tree.
    taken = set(keyword.kwlist) | set(_WORD.findall(source))
    lines = tuple(source.splitlines(keepends=True))
    return tree, frozenset(taken), lines, tuple(_padding_spots(lines, tree, _first_free_line(lines))), _qualnames(tree)


def _first_free_line(lines: tuple[str, ...]) -> int:
    """The first line a new line may go before: a shebang and an encoding declaration must stay put."""
    fixed = 0
    for i, line in enumerate(lines[:2]):
        if (i == 0 and line.startswith("#!")) or _CODING.match(line):
            fixed = i + 1
    return fixed + 1


class _Twin:
    """Plans the edits of one twin of one file (see the module docstring for the kinds)."""

    def __init__(self, source: str, units: list[Unit], references: Counter, kinds: frozenset[str],
                 rng: random.Random):
        self.tree, taken, lines, spots, self.functions = _analysis(source)
        self.lines = list(lines)
        self.units = units
        self.references = references
        self.kinds = kinds
        self.rng = rng
        self.taken = set(taken)
        self.fresh_names: set[str] = set()
        self.renames: dict[str, str] = {}  # fresh name → the local it replaces
        self.dead: set[str] = set()  # the opaque guards inserted, as dumped
        self.placed = False  # whether the unit being planned holds the references statement
        self.spots = spots
        self.free = _first_free_line(lines)

    def fresh(self) -> str:
        letters = "abcdefghijklmnopqrstuvwxyz"
        while True:
            name = "_" + "".join(self.rng.choice(letters) for _ in range(self.rng.randint(3, 9)))
            if name not in self.taken:
                self.taken.add(name)
                self.fresh_names.add(name)
                return name

    # ---- the pieces of text a twin inserts
    def constant(self) -> str:
        rng = self.rng
        pick = rng.randrange(6)
        if pick == 0:
            return repr(rng.randint(-10 ** 6, 10 ** 6))
        if pick == 1:
            return repr(rng.randint(-5, 300))
        if pick == 2:
            return repr("".join(rng.choice("abcdefghijklmnopqrstuvwxyz_") for _ in range(rng.randint(1, 12))))
        if pick == 3:
            return repr(round(rng.uniform(-1000, 1000), rng.randint(0, 6)))
        if pick == 4:
            return rng.choice(("None", "True", "False", "()", "b''", "0.0"))
        return f"({', '.join(repr(rng.randint(0, 99)) for _ in range(rng.randint(1, 4)))},)"

    def neutral(self, introspective: bool) -> str:
        if introspective or self.rng.random() < 0.35:
            return "pass"
        return f"{self.fresh()} = {self.constant()}"

    def allocation(self) -> str:
        """`fresh = [[None] * n, …]`: lists (never folded into a constant, unlike tuples and strings) of
        random lengths in every band of `_LANE_ITEMS`, in random order; it looks up no name."""
        rng = self.rng
        parts = [f"[None] * {rng.randint(lo, hi)}" for lo, hi in _LANE_ITEMS for _ in range(rng.randint(*_LANE_LISTS))]
        rng.shuffle(parts)
        return f"{self.fresh()} = [{', '.join(parts)}]"

    def references_statement(self) -> str:
        """`None is not None and (…)`: never true, so evaluated no further than the `is`, and it looks up
        no name (a test can delete or rebind any global or builtin, and would see the lookup); it only
        makes this code reference the listed constants and strings (a constant tuple keeps a reference
        to each item; the random last item keeps the tuple from being merged with an equal one). Every
        twin of every variant carries one — noise alone where this variant references nothing less often
        than the others — so that its presence tells nothing."""
        items = [text for (_, value), n in sorted(self.references.items(), key=repr)
                 for text in [_literal(value)] * n if text is not None]
        items += [self.constant() for _ in range(self.rng.randint(1, 6))]  # noise, drawn alike on every side
        items.append(repr("".join(self.rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(10))))
        return f"None is not None and ({', '.join(items)},)"

    def comment(self) -> str:
        return "# " + " ".join(self.rng.choice(_WORDS) for _ in range(self.rng.randint(1, 9)))

    # ---- planning
    def plan(self) -> Edits:
        edits = Edits()
        want_references = "references" in self.kinds
        mapping = self.functions
        for unit in self.units:
            if unit.qualname not in mapping:
                continue
            node = mapping[unit.qualname][0]
            unit_edits = Edits()
            self.placed = False
            try:
                for fn in [n for n in ast.walk(node) if isinstance(n, _FUNCS)]:
                    self._plan_function(fn, unit_edits, references=want_references and fn is node)
                if "jitter" in self.kinds:
                    self._plan_jitter(unit, unit_edits)
            except _NoRoom:
                continue
            if self._unit_ok(unit, unit_edits):
                edits.merge(unit_edits)
                want_references = want_references and not self.placed
        if want_references:
            self._place_module_references(edits)
        if "padding" in self.kinds:
            self._plan_padding(edits)
            for unit in self.units:  # the unit's own first line moves too, however few statements precede it
                if unit.first >= self.free and unit.qualname in mapping:
                    for _ in range(self.rng.randint(0, 40)):
                        edits.insert_before(unit.first, "" if self.rng.random() < 0.5 else unit.indent + self.comment())
        return edits

    def _insertable(self, body: list[ast.stmt], i: int) -> bool:
        """Whether a line may go right before `body[i]`: it starts its own line (not after a `;`, not
        on its block's header line), is not an `elif`, and is past the encoding-declaration lines."""
        stmt = body[i]
        first = _first_line(stmt)
        if first < self.free or not _starts_line(self.lines, stmt) or (i > 0 and body[i - 1].end_lineno >= first):
            return False
        return not (isinstance(stmt, ast.If) and self.lines[stmt.lineno - 1].lstrip().startswith("elif"))

    def _indent(self, node: ast.AST) -> str:
        line = self.lines[node.lineno - 1]
        return line[: _char_col(line, node.col_offset)]

    def _plan_function(self, fn: ast.FunctionDef | ast.AsyncFunctionDef, edits: Edits, *, references: bool) -> None:
        rng, kinds = self.rng, self.kinds
        introspective = _introspective(fn)
        body = fn.body
        start = 1 if (isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                      and isinstance(body[0].value.value, str)) else 0
        prelude = [self.references_statement()] if references else []
        self.placed = self.placed or references
        if "neutral" in kinds:
            neutrals = [self.neutral(introspective) for _ in range(rng.randint(1, 4))]
            if not introspective:
                neutrals.insert(rng.randint(0, len(neutrals)), self.allocation())
            prelude += neutrals
        if prelude:  # the top of the body: before its first statement past the docstring, or after that
            if start < len(body) and self._insertable(body, start):
                for text in prelude:
                    edits.insert_before(_first_line(body[start]), self._indent(body[start]) + text)
            elif start == 1 and len(body) == 1 and _starts_line(self.lines, body[0]) \
                    and body[0].end_lineno >= self.free:
                for text in prelude:
                    edits.insert_after(body[0].end_lineno, self._indent(body[0]) + text)
            elif references:
                raise _NoRoom()
        for stmt_list, i in _own_statements(fn):
            stmt = stmt_list[i]
            insertable = self._insertable(stmt_list, i) and not (stmt_list is body and i < start)
            if "neutral" in kinds and insertable and rng.random() < 0.25:
                edits.insert_before(_first_line(stmt), self._indent(stmt) + self.neutral(introspective))
            if "return_temp" in kinds and not introspective and isinstance(stmt, ast.Return) and insertable \
                    and stmt.value is not None and rng.random() < 0.6 \
                    and (i + 1 == len(stmt_list) or stmt_list[i + 1].lineno > stmt.end_lineno):
                line = self.lines[stmt.lineno - 1]
                col = _char_col(line, stmt.col_offset)
                if line[col:col + 6] == "return":
                    name = self.fresh()
                    edits.inline.append((stmt.lineno, col, col + 6, f"{name} ="))
                    edits.insert_after(stmt.end_lineno, f"{self._indent(stmt)}return {name}")
            if "invert_if" in kinds and isinstance(stmt, ast.If) and not stmt.orelse and rng.random() < 0.5:
                self._plan_invert(stmt, edits)
        renamed = self._plan_renames(fn, edits) if "rename" in kinds and not introspective else {}
        if "wrap" in kinds and not introspective:
            self._plan_wraps(fn, edits)
        if "opaque" in kinds and not introspective and start < len(body) and self._insertable(body, start):
            self._plan_opaque(fn, start, renamed, edits)

    def _plan_opaque(self, fn: ast.FunctionDef | ast.AsyncFunctionDef, start: int, renamed: dict[str, str],
                     edits: Edits) -> None:
        """Guard variables seeded at the top of the body, stepped at the top of every loop body, and one to
        three guards at random statement boundaries, most of them after a stepped loop when there is one
        (see the pools below; `_Guards` for what a guard is). The decoys name the locals as this twin
        renamed them (the old name stored in a decoy would be a local again)."""
        rng = self.rng
        plain = sorted(renamed.get(n, n) for n in _plain_locals(fn))
        guards = _Guards(rng, self.fresh, _params(fn), list(_stable_params(fn)), plain)
        top = fn.body[start]
        for text in guards.seeds():
            edits.insert_before(_first_line(top), self._indent(top) + text)
        looped = {id(st) for body, i in _own_statements(fn) if isinstance(body[i], (ast.For, ast.AsyncFor, ast.While))
                  for _, _, st in _statements(body[i])}
        # Three pools: before any stepped loop, inside a loop (the predicate then runs every iteration: kept
        # rare), and after the first stepped loop, where the variables hold values no finite enumeration of
        # paths reaches (most guards go there when there is one).
        early: list[ast.stmt] = []
        inside: list[ast.stmt] = []
        late: list[ast.stmt] = []
        stepped = False
        for stmt_list, i in _own_statements(fn):  # in the order of the text, a loop's body right after it
            stmt = stmt_list[i]
            if self._insertable(stmt_list, i) and not (stmt_list is fn.body and i < start):
                (inside if id(stmt) in looped else late if stepped else early).append(stmt)
            if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)) and self._insertable(stmt.body, 0):
                edits.insert_before(_first_line(stmt.body[0]), self._indent(stmt.body[0]) + guards.step())
                stepped = True
        for _ in range(rng.randint(1, 3)):
            pools = [pool for pool, weight in ((late, 0.7), (inside, 0.15), (early, 0.15))
                     if pool and rng.random() < weight] or [pool for pool in (late, early, inside) if pool]
            if not pools:
                break
            pool = pools[0]
            stmt = pool.pop(rng.randrange(len(pool)))
            lines = guards.guard()
            self.dead.add(_dump(ast.parse("\n".join(lines)).body[0]))
            for line in lines:
                edits.insert_before(_first_line(stmt), self._indent(stmt) + line)

    def _plan_invert(self, stmt: ast.If, edits: Edits) -> None:
        test, first = stmt.test, stmt.body[0]
        if test.end_lineno >= _first_line(first) or not _starts_line(self.lines, first) \
                or not _starts_line(self.lines, stmt):
            return
        end_line = self.lines[test.end_lineno - 1]
        end_col = _char_col(end_line, test.end_col_offset)
        if not _HEADER_REST.match(end_line[end_col:].rstrip("\r\n")):
            return
        start_line = self.lines[test.lineno - 1]
        start_col = _char_col(start_line, test.col_offset)
        edits.inline.append((test.lineno, start_col, start_col, "not ("))
        edits.inline.append((test.end_lineno, end_col, end_col, ")"))
        edits.insert_after(test.end_lineno, self._indent(first) + "pass")
        edits.insert_after(test.end_lineno, self._indent(stmt) + "else:")

    def _plan_renames(self, fn: ast.FunctionDef | ast.AsyncFunctionDef, edits: Edits) -> dict[str, str]:
        """Rename a random half of `fn`'s plain locals; a name whose every use cannot be found in the text
        where the AST puts it keeps its name. Returns {old: new}."""
        planned: list[tuple[int, int, int, str]] = []
        mine: dict[str, str] = {}
        for old in sorted(n for n in _plain_locals(fn) if self.rng.random() < 0.5):
            uses = [n for n in _own_nodes(fn) if isinstance(n, ast.Name) and n.id == old]
            spots = []
            for node in uses:
                line = self.lines[node.lineno - 1]
                col = _char_col(line, node.col_offset)
                if node.lineno != node.end_lineno or line[col:col + len(old)] != old:
                    break
                spots.append((node.lineno, col))
            else:
                new = self.fresh()
                self.renames[new] = old
                mine[old] = new
                planned += [(line, col, col + len(old), new) for line, col in spots]
        edits.inline += planned
        return mine

    def _plan_wraps(self, fn: ast.FunctionDef | ast.AsyncFunctionDef, edits: Edits) -> None:
        """Wrap some names the body reads as `(name, k)[0]`: the same object, read at the same point, a
        few instructions later. Not the function's plain locals (renames own their tokens), not in
        annotations, f-strings or patterns, never `super` or a dunder."""
        skip = _plain_locals(fn) | {"super"}
        found: list[ast.Name] = []
        stack: list[ast.AST] = list(fn.body)
        while stack:
            node = stack.pop()
            if isinstance(node, (*_FUNCS, ast.ClassDef, ast.JoinedStr, ast.match_case)):
                continue
            if isinstance(node, ast.Name):
                if isinstance(node.ctx, ast.Load) and node.id not in skip and not node.id.startswith("__"):
                    found.append(node)
                continue
            for name, value in ast.iter_fields(node):
                if name == "annotation":
                    continue
                stack.extend(v for v in (value if isinstance(value, list) else [value]) if isinstance(v, ast.AST))
        # Most names: an offset between two callbacks of one expression stays A's only when no name between
        # them is wrapped (rarely); the wrappers' sizes differ (1-3 constants), so residues move too.
        for node in sorted(found, key=lambda n: (n.lineno, n.col_offset)):
            if self.rng.random() >= 0.85 or node.lineno < self.free:
                continue
            line = self.lines[node.lineno - 1]
            col = _char_col(line, node.col_offset)
            if line[col:col + len(node.id)] == node.id:
                pad = ", ".join(str(self.rng.randint(0, 9)) for _ in range(self.rng.randint(1, 3)))
                edits.inline.append((node.lineno, col, col + len(node.id), f"({node.id}, {pad})[0]"))

    def _plan_jitter(self, unit: Unit, edits: Edits) -> None:
        text = "".join(self.lines[unit.first - 1: unit.last])
        try:
            tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
        except (tokenize.TokenError, IndentationError, SyntaxError):
            return
        skip = {tokenize.INDENT, tokenize.DEDENT, tokenize.NEWLINE, tokenize.NL, tokenize.COMMENT,
                tokenize.ENDMARKER}
        fstring_start, fstring_end = getattr(tokenize, "FSTRING_START", -1), getattr(tokenize, "FSTRING_END", -2)
        depth, previous = 0, None
        for tok in tokens:
            if tok.type == fstring_start:
                depth += 1
            # Inside an f-string (3.12+ tokenizes it) a space could land in its text or after `=`.
            if depth or tok.type in skip:
                if tok.type == fstring_end:
                    depth -= 1
                previous = tok if tok.type == fstring_end and not depth else None
                continue
            if previous is not None and previous.end[0] == tok.start[0] and self.rng.random() < 0.15:
                line = unit.first + tok.start[0] - 1
                edits.inline.append((line, tok.start[1], tok.start[1], " " * self.rng.randint(1, 2)))
            previous = tok

    def _unit_ok(self, unit: Unit, edits: Edits) -> bool:
        """Whether the unit, edited, is the original modulo the twin's own insertions (`Canonical`)."""
        lines = self.lines[unit.first - 1: unit.last]
        shift = unit.first - 1
        local = Edits([(line - shift, col, end, text) for line, col, end, text in edits.inline],
                      {k - shift: v for k, v in edits.before.items()}, {k - shift: v for k, v in edits.after.items()})
        if any(k < 1 or k > len(lines) for k in [*local.before, *local.after, *(e[0] for e in local.inline)]):
            return False
        try:
            new_fn = _parse_unit("".join(local.apply(lines)), unit.indent)
            old_fn = _parse_unit("".join(lines), unit.indent)
        except SyntaxError:
            return False
        return _dump(self.canonical().visit(new_fn)) == _dump(Canonical(set(), {}).visit(old_fn))

    def canonical(self) -> "Canonical":
        """What undoes this twin's edits (the original is undone with `Canonical(set(), {})`)."""
        return Canonical(self.fresh_names - set(self.renames), self.renames, frozenset(self.dead))

    def _place_module_references(self, edits: Edits) -> None:
        """No unit took the references statement: it goes at module level (it binds no name), after the
        docstring and any `from __future__` import."""
        body = self.tree.body
        i = 0
        while i < len(body) and ((i == 0 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant))
                                 or (isinstance(body[i], ast.ImportFrom) and body[i].module == "__future__")):
            i += 1
        text = self.references_statement()
        if i < len(body) and self._insertable(body, i):
            edits.insert_before(_first_line(body[i]), text)
        elif i > 0 and body[i - 1].end_lineno >= self.free and _starts_line(self.lines, body[i - 1]):
            edits.insert_after(body[i - 1].end_lineno, text)

    def _plan_padding(self, edits: Edits) -> None:
        spots = self.spots
        if not spots:
            return
        budget = self.rng.randint(0, max(2048, sum(map(len, self.lines)) // 4))
        used = 0
        while used < budget:
            line, indent = self.rng.choice(spots)
            text = "" if self.rng.random() < 0.4 else indent + self.comment()
            edits.insert_before(line, text)
            used += len(text) + 1


def _padding_spots(lines: tuple[str, ...], tree: ast.Module, free: int) -> list[tuple[int, str]]:
    """(line, indentation) of every statement start a blank or comment line may precede."""
    spots = []
    for body, i, stmt in _statements(tree):
        first = _first_line(stmt)
        line = lines[stmt.lineno - 1]
        if first < free or line[: _char_col(line, stmt.col_offset)].strip() \
                or (i > 0 and body[i - 1].end_lineno >= first) \
                or (isinstance(stmt, ast.If) and line.lstrip().startswith("elif")):
            continue
        spots.append((first, line[: _char_col(line, stmt.col_offset)]))
    return spots


class _NoRoom(Exception):
    """A planned edit has no safe place: the unit keeps its original text."""


def _parse_unit(text: str, indent: str) -> ast.AST:
    """The one function defined by `text` (indented by `indent` as in its file)."""
    module = ast.parse(f"class _Unit:\n{text}" if indent else text)
    holder = module.body[0].body if indent else module.body  # type: ignore[attr-defined]
    funcs = [n for n in holder if isinstance(n, _FUNCS)]
    if len(funcs) != 1:
        raise SyntaxError("the unit is not one function")
    return funcs[0]


class Canonical(ast.NodeTransformer):
    """What a twin's insertions undo to: statements binding a fresh name dropped (after `fresh = e` /
    `return fresh` is folded back into `return e`), `pass` and the references statement dropped,
    `if not (c): <nothing> else: X` back to `if c: X`, renamed locals back to their names. Applied to
    the original too, so the original's own `pass` statements are dropped on both sides."""

    def __init__(self, fresh: set[str], renames: dict[str, str], dead: frozenset[str] | set[str] = frozenset()):
        self.fresh, self.renames, self.dead = fresh, renames, dead

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in self.renames:
            node.id = self.renames[node.id]
        return node

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        value, key = node.value, node.slice
        if isinstance(node.ctx, ast.Load) and isinstance(value, ast.Tuple) and len(value.elts) >= 2 \
                and isinstance(value.elts[0], ast.Name) \
                and all(isinstance(e, ast.Constant) and type(e.value) is int for e in value.elts[1:]) \
                and isinstance(key, ast.Constant) and type(key.value) is int and key.value == 0:
            return self.visit(value.elts[0])  # a wrapped name
        return self.generic_visit(node)

    def _is_fresh_store(self, stmt: ast.stmt) -> bool:
        if isinstance(stmt, ast.AugAssign):  # an opaque guard's variable stepped in a loop
            return isinstance(stmt.target, ast.Name) and stmt.target.id in self.fresh
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
            return False
        target = stmt.targets[0]
        if isinstance(target, ast.Tuple):  # a guard pair shifted together
            return bool(target.elts) and all(isinstance(e, ast.Name) and e.id in self.fresh for e in target.elts)
        return isinstance(target, ast.Name) and target.id in self.fresh

    def _is_dead(self, stmt: ast.stmt) -> bool:
        """An opaque guard this twin inserted, recognised by its exact text (not by its shape: a guard
        that landed anywhere but where it was planned, or any statement of the original, stays)."""
        if not (self.dead and isinstance(stmt, (ast.If, ast.While))):
            return False
        # Every guard's test reads a fresh name: only those are worth dumping (dumps are the check's cost).
        if not any(isinstance(n, ast.Name) and n.id in self.fresh for n in ast.walk(stmt.test)):
            return False
        return _dump(stmt) in self.dead

    def _is_references(self, stmt: ast.stmt) -> bool:
        value = getattr(stmt, "value", None)
        return (isinstance(stmt, ast.Expr) and isinstance(value, ast.BoolOp) and isinstance(value.op, ast.And)
                and len(value.values) == 2 and _dump(value.values[0]) == _NEVER
                and isinstance(value.values[1], ast.Tuple))

    def _body(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        i = 0
        while i < len(stmts):
            stmt = stmts[i]
            nxt = stmts[i + 1] if i + 1 < len(stmts) else None
            if self._is_fresh_store(stmt) and isinstance(nxt, ast.Return) and isinstance(nxt.value, ast.Name) \
                    and nxt.value.id == stmt.targets[0].id:  # type: ignore[attr-defined]
                out.append(ast.Return(value=stmt.value))
                i += 2
                continue
            if not (isinstance(stmt, ast.Pass) or self._is_fresh_store(stmt) or self._is_references(stmt)
                    or self._is_dead(stmt)):
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


# --------------------------------------------------------------------------- API

@dataclass(frozen=True, slots=True)
class FilePlan:
    """What twinning one file needs, computed once per grading from its variants' texts."""

    path: str
    units: tuple[tuple[Unit, ...], ...]  # per variant
    references: tuple[Counter, ...]  # per variant: what it must add


def plan_file(path: str, sources: list[str]) -> FilePlan:
    """Units and missing references of one file's variants (sources in the order variants are named)."""
    try:
        units = changed_units(sources)
        return FilePlan(path, tuple(tuple(u) for u in units), tuple(missing_references(sources, units)))
    except TwinError as exc:
        raise TwinError(f"{path} {exc}") from None


def twin_code(source: str, units: tuple[Unit, ...], references: Counter, *, rng: random.Random,
              kinds: frozenset[str] | set[str] = frozenset(KINDS),
              filename: str = "<twin>") -> tuple[str, types.CodeType | None]:
    """One twin of one variant of a file, and its code compiled as `filename` (the one compile a twin
    needs: it checks the twin and gives its bytecode). Falls back to padding and the references statement
    alone, then to the source itself, when a richer twin does not compile (it always should; the
    fallbacks keep a grading from failing on a construct this module does not foresee)."""
    kinds = frozenset(kinds)
    for attempt, attempt_units in ((kinds, list(units)), (kinds & {"padding", "references"}, [])):
        twin = _Twin(source, attempt_units, references, attempt, random.Random(rng.getrandbits(64)))
        text = "".join(twin.plan().apply(twin.lines))
        try:
            return text, compile(text, filename, "exec", dont_inherit=True)
        except (SyntaxError, ValueError):
            continue
    try:
        return source, compile(source, filename, "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return source, None


def twin_source(source: str, units: tuple[Unit, ...], references: Counter, *, rng: random.Random,
                kinds: frozenset[str] | set[str] = frozenset(KINDS)) -> str:
    """One twin of one variant of a file (see `twin_code`)."""
    return twin_code(source, units, references, rng=rng, kinds=kinds)[0]

"""Value specs on the host: the model of the probe's JSON values, Python-like equality, and rendering as source.

A value spec describes a Python value well enough to re-create it in a test: literals, containers,
dataclasses, named tuples, enum members, objects built by calling their class, iterators over a list,
functions and classes by importable name, and lambdas by their source. The probe writes
them as plain dicts (see ``probe.py``); here they are validated into `Value` and
- compared with the semantics the generated test will have at run time (`same`), so an input is only
  called distinguishing when an ``assert ==`` on it really tells the two versions apart;
- rendered as Python source (`render`), collecting the imports the expression needs in `Imports`.
"""

from __future__ import annotations

import math
import re
import sys
from decimal import Decimal, InvalidOperation
from enum import StrEnum
from fractions import Fraction

from pydantic import BaseModel, ConfigDict, Field


class ValueKind(StrEnum):
    """The tag ``t`` of a value spec."""

    NONE = "none"
    BOOL = "bool"
    INT = "int"
    FLOAT = "float"
    STR = "str"
    BYTES = "bytes"
    LIST = "list"
    TUPLE = "tuple"
    SET = "set"
    FROZENSET = "frozenset"
    DICT = "dict"
    DATACLASS = "dataclass"
    NAMEDTUPLE = "namedtuple"
    ENUM = "enum"
    OBJECT = "object"
    ITER = "iter"  # iter([...]): an iterator argument
    REF = "ref"  # a function, class or builtin, by importable name
    LAMBDA = "lambda"  # a lambda, by its one-line source
    ATTR = "attr"  # the public attribute `v` of the one item: an object its owner built (`Stuff(...).machine`)
    # An object a test built by applying an operator or calling a public method: `v` the method, `items` the
    # receiver then the arguments, `kw` keyword arguments, module/qualname the result's class
    # (`"x" / Int8ub`, `Query().f == 1`, `Int8ub[3]`, `Struct(...).compile()`).
    OP = "op"
    OPAQUE = "opaque"


NUMBERS = frozenset({ValueKind.BOOL, ValueKind.INT, ValueKind.FLOAT})
SEQUENCES = frozenset({ValueKind.LIST, ValueKind.TUPLE, ValueKind.SET, ValueKind.FROZENSET})
ORDERED = frozenset({ValueKind.LIST, ValueKind.ITER})
SET_KINDS = frozenset({ValueKind.SET, ValueKind.FROZENSET})
# Python compares a named tuple equal to a plain tuple with the same items.
TUPLE_KINDS = frozenset({ValueKind.TUPLE, ValueKind.NAMEDTUPLE})
# Stdlib classes whose instances the probe writes as `object` specs and whose equality is by value.
_NUMERIC_OBJECTS = {("decimal", "Decimal"), ("fractions", "Fraction")}


class Value(BaseModel):
    """One value spec: a tag and the payload that tag uses (others stay None)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    t: ValueKind = Field(description="What kind of value this is.")
    v: bool | int | str | None = Field(
        None,
        description="Scalar payload: bool, int, str; float as its repr; bytes as hex; enum member name; opaque hash; "
        "lambda source; attribute name.",
    )
    items: list[Value] | None = Field(
        None, description="Items of a list, tuple, set, frozenset or iterator; the owner of an attribute."
    )
    pairs: list[tuple[Value, Value]] | None = Field(None, description="Key/value pairs of a dict, in order.")
    module: str | None = Field(None, description="Module of the class (enum, dataclass, namedtuple, object).")
    qualname: str | None = Field(None, description="Qualified name of the class inside its module.")
    fields: dict[str, Value] | None = Field(None, description="Constructor fields of a dataclass or named tuple.")
    args: list[Value] | None = Field(None, description="Positional constructor arguments of an object.")
    kw: dict[str, Value] | None = Field(None, description="Keyword constructor arguments of an object.")
    type: str | None = Field(None, description="Type name of an opaque value.")
    names: dict[str, str] | None = Field(
        None, description="Lambda: each global name it uses -> `module` (a module) or `module:qualname` (an object)."
    )

    def to_probe(self) -> dict:
        """The plain-dict form the probe reads."""
        return self.model_dump(mode="json", exclude_none=True)

    def children(self) -> list[Value]:
        """Every value directly inside this one."""
        out = list(self.items or [])
        for key, val in self.pairs or []:
            out += [key, val]
        return out + list((self.fields or {}).values()) + list(self.args or []) + list((self.kw or {}).values())


def float_value(x: float) -> Value:
    return Value(t=ValueKind.FLOAT, v=repr(float(x)))


def as_float(value: Value) -> float:
    return float(value.v)  # type: ignore[arg-type]


# Text that belongs to the machine or the run that recorded it, not to the function's behaviour: temporary
# and home directories (pytest's tmp_path is /tmp/pytest-of-<user>/pytest-<n>/…), object addresses, and the
# probe's marks of object identities (`<State('A')@<id:1>>`: an id() the probe numbered so that two runs compare).
_HOST_SPECIFIC = re.compile(r"pytest-of-|(?:^|[\s'\"(=:])/(?:tmp|var/tmp|var/folders|private/var|home|root|workspace)/"
                            r"|\bat 0x[0-9a-fA-F]{6,}|\b0x[0-9a-fA-F]{8,}\b|<id:\d+>")


def host_specific(value: Value) -> bool:
    """True when some text inside the value names the recording machine or run (paths, addresses): a test
    asserting it passes only where it was generated."""
    if value.t is ValueKind.STR and isinstance(value.v, str) and _HOST_SPECIFIC.search(value.v):
        return True
    return any(host_specific(c) for c in value.children())


def is_concrete(value: Value) -> bool:
    """True when the value can be written in a test (nothing opaque inside)."""
    return value.t is not ValueKind.OPAQUE and all(is_concrete(c) for c in value.children())


def size(value: Value) -> int:
    """A rough measure of how much a value takes to read: nodes plus the length of scalars as written."""
    text = len(repr(value.v)) if value.v is not None else 0
    return 1 + text // 3 + sum(size(c) for c in value.children())


# ----------------------------------------------------------------------------------------- equality


def _number(value: Value) -> float | int:
    if value.t is ValueKind.FLOAT:
        return as_float(value)
    return int(value.v)  # type: ignore[arg-type]


def _numbers_equal(a: float | int, b: float | int, rel_tol: float, abs_tol: float) -> bool:
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    a, b = float(a), float(b)
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return math.isclose(a, b, rel_tol=rel_tol, abs_tol=abs_tol)


def _exact_number(value: Value) -> Decimal | Fraction | None:
    """The number a Decimal/Fraction object spec stands for, or None."""
    if (value.module, value.qualname) not in _NUMERIC_OBJECTS or value.kw:
        return None
    try:
        args = [a.v for a in value.args or []]
        return Decimal(str(args[0])) if value.qualname == "Decimal" else Fraction(*args)  # type: ignore[arg-type]
    except (InvalidOperation, TypeError, ValueError, ZeroDivisionError, IndexError):
        return None


def _match_unordered(a: list[Value], b: list[Value], rel_tol: float, abs_tol: float) -> bool:
    if len(a) != len(b):
        return False
    free = list(b)
    for item in a:
        hit = next((i for i, other in enumerate(free) if same(item, other, rel_tol, abs_tol)), None)
        if hit is None:
            return False
        free.pop(hit)
    return True


def same(a: Value, b: Value, rel_tol: float = 1e-9, abs_tol: float = 0.0) -> bool:
    """Whether ``a == b`` would hold in Python for the values described (floats within ``rel_tol``; nan == nan).

    Where Python's answer depends on code we cannot run here (an object's own ``__eq__``), the answer
    is "equal only if built the same way", which the generated test's own run on A then confirms.
    """
    if a.t in NUMBERS and b.t in NUMBERS:
        return _numbers_equal(_number(a), _number(b), rel_tol, abs_tol)
    if a.t in TUPLE_KINDS and b.t in TUPLE_KINDS:
        return _seq_equal(_tuple_items(a), _tuple_items(b), rel_tol, abs_tol)
    if a.t in SET_KINDS and b.t in SET_KINDS:
        return _match_unordered(list(a.items or []), list(b.items or []), rel_tol, abs_tol)
    if a.t != b.t:
        return False
    if a.t in ORDERED:
        return _seq_equal(list(a.items or []), list(b.items or []), rel_tol, abs_tol)
    if a.t is ValueKind.DICT:
        return _dicts_equal(a, b, rel_tol, abs_tol)
    if a.t is ValueKind.OBJECT:
        x, y = _exact_number(a), _exact_number(b)
        if x is not None and y is not None:
            return x == y
    if a.module != b.module or a.qualname != b.qualname or a.v != b.v or a.type != b.type or a.names != b.names:
        return False
    if a.t is ValueKind.DATACLASS:
        return _fields_equal(a.fields or {}, b.fields or {}, rel_tol, abs_tol)
    if a.t is ValueKind.OBJECT:
        return _seq_equal(list(a.args or []), list(b.args or []), rel_tol, abs_tol) and _fields_equal(
            a.kw or {}, b.kw or {}, rel_tol, abs_tol
        )
    if a.t in (ValueKind.ATTR, ValueKind.OP):
        return _seq_equal(list(a.items or []), list(b.items or []), rel_tol, abs_tol) and _fields_equal(
            a.kw or {}, b.kw or {}, rel_tol, abs_tol
        )
    return True


def _tuple_items(value: Value) -> list[Value]:
    return list(value.fields.values()) if value.t is ValueKind.NAMEDTUPLE and value.fields else list(value.items or [])


def _seq_equal(a: list[Value], b: list[Value], rel_tol: float, abs_tol: float) -> bool:
    return len(a) == len(b) and all(same(x, y, rel_tol, abs_tol) for x, y in zip(a, b))


def _fields_equal(a: dict[str, Value], b: dict[str, Value], rel_tol: float, abs_tol: float) -> bool:
    return a.keys() == b.keys() and all(same(a[k], b[k], rel_tol, abs_tol) for k in a)


def _dicts_equal(a: Value, b: Value, rel_tol: float, abs_tol: float) -> bool:
    pa, pb = list(a.pairs or []), list(b.pairs or [])
    if len(pa) != len(pb):
        return False
    for key, val in pa:
        # Keys are hashed, so they match exactly (1 and 1.0 are one key, as in Python).
        other = next((v for k, v in pb if same(key, k, 0.0, 0.0)), None)
        if other is None or not same(val, other, rel_tol, abs_tol):
            return False
    return True


# ---------------------------------------------------------------------------------------- rendering


class Imports:
    """The imports a test file needs, and the local name each imported class or function is bound to."""

    def __init__(self, reserved: set[str] | None = None) -> None:
        self._bound: dict[tuple[str, str], str] = {}
        self._taken: set[str] = set(reserved or ())
        self._aliases: dict[str, str] = {}  # import module as alias
        self.modules: set[str] = set()

    def use_module(self, module: str) -> str:
        """``import module`` (for pytest, asyncio); returns the name to use."""
        self.modules.add(module)
        self._taken.add(module.split(".")[0])
        return module

    def bind_exact(self, name: str, where: str) -> None:
        """Make ``name`` mean ``where`` (``module`` or ``module:qualname``), as source written elsewhere expects.

        Raises ValueError when ``name`` already means something else in this file.
        """
        module, _, qualname = where.partition(":")
        if qualname:
            if "." in qualname and qualname.split(".")[0] != name:
                raise ValueError(f"{name} cannot name {where}")
            bound = self._bound.get((module, qualname.split(".")[0]))
            if bound == name:
                return
            if name in self._taken or bound is not None:
                raise ValueError(f"{name} is already taken")
            self._bound[(module, qualname.split(".")[0])] = name
        elif self._aliases.get(name) != module:
            if name in self._taken:
                raise ValueError(f"{name} is already taken")
            self._aliases[name] = module
        self._taken.add(name)

    def name_for(self, module: str, qualname: str) -> str:
        """An expression naming ``module.qualname``, adding ``from module import Top`` (aliased on a clash)."""
        if module == "builtins":
            return qualname
        top, _, rest = qualname.partition(".")
        local = self._bound.get((module, top))
        if local is None:
            local, n = top, 2
            while local in self._taken:
                local, n = f"{top}_{n}", n + 1
            self._bound[(module, top)] = local
            self._taken.add(local)
        return f"{local}.{rest}" if rest else local

    def is_taken(self, name: str) -> bool:
        return name in self._taken

    def reserve(self, name: str) -> None:
        self._taken.add(name)

    def lines(self) -> list[str]:
        """Import lines grouped stdlib / third party / the project, each group sorted."""
        groups: list[list[str]] = [[], [], []]
        for module in sorted(self.modules):
            groups[_group(module)].append(f"import {module}")
        for alias, module in sorted(self._aliases.items()):
            groups[_group(module)].append(f"import {module}" if alias == module else f"import {module} as {alias}")
        by_module: dict[str, list[str]] = {}
        for (module, top), local in self._bound.items():
            by_module.setdefault(module, []).append(top if local == top else f"{top} as {local}")
        for module in sorted(by_module):
            groups[_group(module)].append(f"from {module} import {', '.join(sorted(by_module[module]))}")
        out: list[str] = []
        for group in groups:
            if group:
                out += sorted(group, key=lambda line: (line.startswith("from"), line)) + [""]
        return out[:-1]


def _group(module: str) -> int:
    top = module.split(".")[0]
    if top in sys.stdlib_module_names:
        return 0
    return 1 if top == "pytest" else 2


class Approx(BaseModel):
    """How floats of an expected value are compared: ``pytest.approx`` with the given relative tolerance."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rel: float | None = Field(None, description="Relative tolerance; None keeps pytest.approx's default.")


_FLOAT_WORDS = {"inf": "float('inf')", "-inf": "float('-inf')", "nan": "float('nan')"}


def render(value: Value, imports: Imports, approx: Approx | None = None) -> str:
    """Python source for ``value``; floats wrapped in ``pytest.approx`` where equality allows it when ``approx`` is set."""
    return _Renderer(imports, approx).expr(value, approx is not None)


class _Renderer:
    def __init__(self, imports: Imports, approx: Approx | None) -> None:
        self.imports = imports
        self.approx = approx

    def _approx_call(self, inner: str, nan: bool) -> str:
        pytest_name = self.imports.use_module("pytest")
        extra = ""
        if self.approx is not None and self.approx.rel is not None:
            extra += f", rel={self.approx.rel!r}"
        if nan:
            extra += ", nan_ok=True"
        return f"{pytest_name}.approx({inner}{extra})"

    def expr(self, value: Value, loose: bool) -> str:
        """``loose``: a float here may be compared approximately (not a set item, key or constructor argument)."""
        kind = value.t
        if kind is ValueKind.FLOAT:
            return self._float(value, loose)
        if loose and kind in (ValueKind.LIST, ValueKind.TUPLE, ValueKind.DICT) and _flat_numbers(value):
            # pytest.approx compares a flat sequence or dict of numbers in one go, which reads best.
            return self._approx_call(self.expr(value, False), _has_nan(value))
        if kind is ValueKind.NONE:
            return "None"
        if kind in (ValueKind.BOOL, ValueKind.INT, ValueKind.STR):
            return repr(value.v)
        if kind is ValueKind.BYTES:
            return repr(bytes.fromhex(str(value.v)))
        if kind in SEQUENCES:
            return self._sequence(value, loose)
        if kind is ValueKind.DICT:
            inner = ", ".join(f"{self.expr(k, False)}: {self.expr(v, loose)}" for k, v in value.pairs or [])
            return "{" + inner + "}"
        if kind is ValueKind.ITER:
            return f"iter([{', '.join(self.expr(item, False) for item in value.items or [])}])"
        if kind is ValueKind.REF:
            return self.imports.name_for(str(value.module), str(value.qualname))
        if kind is ValueKind.ATTR:
            (owner,) = value.items or []
            return f"{self._operand(owner)}.{value.v}"
        if kind is ValueKind.OP:
            return self._operation(value)
        if kind is ValueKind.LAMBDA:
            for name, where in sorted((value.names or {}).items()):
                self.imports.bind_exact(name, where)
            return f"({value.v})"
        return self._classed(value)

    def _operand(self, value: Value) -> str:
        """An operand of an operator or the object of an attribute: parenthesized when it is an operation."""
        text = self.expr(value, False)
        operator = str(value.v) in _OPERATOR_SYMBOLS or str(value.v) in _UNARY_SYMBOLS
        return f"({text})" if value.t is ValueKind.OP and operator else text

    def _operation(self, value: Value) -> str:
        name = str(value.v)
        receiver, *args = value.items or []
        recv = self._operand(receiver)
        if name == "__getattr__" and len(args) == 1 and isinstance(args[0].v, str) and args[0].v.isidentifier():
            return f"{recv}.{args[0].v}"
        if name == "__getitem__" and len(args) == 1:
            return f"{recv}[{self.expr(args[0], False)}]"
        if name in _UNARY_SYMBOLS and not args:
            return f"{_UNARY_SYMBOLS[name]}{recv}"
        if name in _OPERATOR_SYMBOLS and len(args) == 1 and not value.kw:
            symbol, reflected = _OPERATOR_SYMBOLS[name]
            other = self._operand(args[0])
            return f"{other} {symbol} {recv}" if reflected else f"{recv} {symbol} {other}"
        parts = [self.expr(a, False) for a in args] + [f"{k}={self.expr(v, False)}" for k, v in (value.kw or {}).items()]
        call = f"({', '.join(parts)})"
        return f"{recv}{call}" if name == "__call__" else f"{recv}.{name}{call}"

    def _float(self, value: Value, loose: bool) -> str:
        text = str(value.v)
        word = _FLOAT_WORDS.get(text.lstrip("+"))
        if word is not None and text != "nan":
            return word
        if not loose:
            return word or text
        return self._approx_call(word or text, nan=text == "nan")

    def _sequence(self, value: Value, loose: bool) -> str:
        kind = value.t
        in_set = kind in SET_KINDS
        parts = [self.expr(item, loose and not in_set) for item in value.items or []]
        inner = ", ".join(parts)
        if kind is ValueKind.LIST:
            return f"[{inner}]"
        if kind is ValueKind.TUPLE:
            return f"({inner},)" if len(parts) == 1 else f"({inner})"
        body = "{" + inner + "}" if parts else ""
        if kind is ValueKind.SET:
            return body or "set()"
        return f"frozenset({body})"

    def _classed(self, value: Value) -> str:
        kind = value.t
        if kind is ValueKind.OPAQUE:
            raise ValueError(f"an opaque {value.type} value cannot be written as source")
        cls = self.imports.name_for(str(value.module), str(value.qualname))
        if kind is ValueKind.ENUM:
            member = str(value.v)
            return f"{cls}.{member}" if member.isidentifier() else f"{cls}[{member!r}]"
        if kind in (ValueKind.DATACLASS, ValueKind.NAMEDTUPLE):
            return f"{cls}({', '.join(f'{k}={self.expr(v, False)}' for k, v in (value.fields or {}).items())})"
        args = [self.expr(a, False) for a in value.args or []]
        args += [f"{k}={self.expr(v, False)}" for k, v in (value.kw or {}).items()]
        return f"{cls}({', '.join(args)})"


_BINARY = {"add": "+", "sub": "-", "mul": "*", "matmul": "@", "truediv": "/", "floordiv": "//", "mod": "%",
           "pow": "**", "lshift": "<<", "rshift": ">>", "and": "&", "or": "|", "xor": "^"}
# Operator method -> (symbol, reflected): `__rtruediv__` on `self` is `other / self`.
_OPERATOR_SYMBOLS = {f"__{n}__": (sym, False) for n, sym in _BINARY.items()} | {
    f"__r{n}__": (sym, True) for n, sym in _BINARY.items()} | {
    "__eq__": ("==", False), "__ne__": ("!=", False), "__lt__": ("<", False), "__le__": ("<=", False),
    "__gt__": (">", False), "__ge__": (">=", False)}
_UNARY_SYMBOLS = {"__neg__": "-", "__pos__": "+", "__invert__": "~"}


def _flat_numbers(value: Value) -> bool:
    items = [v for _, v in value.pairs] if value.t is ValueKind.DICT and value.pairs else list(value.items or [])
    # Booleans stay exact: pytest.approx refuses to approximate them.
    return bool(items) and all(i.t in (ValueKind.INT, ValueKind.FLOAT) for i in items) and any(
        i.t is ValueKind.FLOAT for i in items
    )


def _has_nan(value: Value) -> bool:
    return value.t is ValueKind.FLOAT and str(value.v) == "nan" or any(_has_nan(c) for c in value.children())

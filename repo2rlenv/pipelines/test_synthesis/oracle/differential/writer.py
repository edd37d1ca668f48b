"""Render chosen calls and their expected outcomes as a small, readable pytest file.

One test function per call: build the receiver (methods) and drive it through its recorded steps, bind any
argument whose state is asserted, call through the public API (protocol methods in their usual spelling:
``obj[k]``, ``len(obj)``, ``next(obj)``), then assert the return value (``==``, ``pytest.approx`` for floats,
``is`` for None and booleans), the exception (``pytest.raises``), and the facets named by the case: public
attributes, length, iteration and what is left of iterators. The file says nothing about where the
expectations came from.
"""

from __future__ import annotations

import keyword
import re

from pydantic import BaseModel, ConfigDict, Field

from repo2rlenv.pipelines.test_synthesis.oracle.differential.records import (
    CallSpec,
    Outcome,
    OutcomeKind,
    ParamKind,
    Step,
    TargetInfo,
    TargetKind,
)
from repo2rlenv.pipelines.test_synthesis.oracle.differential.values import Approx, Imports, Value, ValueKind, render

INDENT = "    "
RANDOM_SEED = 0  # probe_replay.RANDOM_SEED


class TargetRef(BaseModel):
    """A function by import path, with what the probe learned about it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    module: str
    qualname: str
    info: TargetInfo

    @property
    def import_module(self) -> str:
        return self.info.import_from or self.module


class TestCase(BaseModel):
    """One test to write: a call and what to assert about its (expected) outcome."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    __test__ = False  # not a pytest test class

    call: CallSpec
    expected: Outcome = Field(description="The outcome the test asserts.")
    entry: TargetRef | None = Field(None, description="The function the call calls, when not the file's target.")
    assert_return: bool = Field(True, description="Assert the return value.")
    facets: list[str] = Field(default_factory=list, description="Keys of `expected.state` to assert after the call.")
    match_message: bool = Field(False, description="Also match the exception message.")
    exact_type: bool = Field(False, description="Assert the exception's exact type, not a subclass.")
    approx_rel: float | None = Field(None, description="Relative tolerance for floats; None = pytest.approx default.")


class WrittenTests(BaseModel):
    """A rendered test file and which cases it holds."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: str
    included: list[int] = Field(description="Indexes of the cases written, in file order.")
    test_names: list[str] = Field(description="Test function names, aligned with `included`.")


def snake(name: str) -> str:
    """``LineItem`` -> ``line_item``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower().strip("_") or "value"


def non_blank_lines(source: str) -> int:
    return sum(1 for line in source.splitlines() if line.strip())


def write_test_file(target: TargetRef, cases: list[TestCase], *, max_loc: int = 200) -> WrittenTests:
    """The longest prefix of ``cases`` whose file fits in ``max_loc`` non-blank lines (may hold no test)."""
    for count in range(len(cases), -1, -1):
        source, names = _render_file(target, cases[:count])
        if non_blank_lines(source) <= max_loc or count == 0:
            return WrittenTests(source=source, included=list(range(count)), test_names=names)
    raise AssertionError("unreachable")


def _render_file(target: TargetRef, cases: list[TestCase]) -> tuple[str, list[str]]:
    imports = Imports(reserved={"result", "excinfo", "_"})
    stem = snake(target.qualname.replace(".", "_").lstrip("_"))
    names = [f"test_{stem}_{n}" for n in range(1, len(cases) + 1)]
    bodies = [_TestBody(case.entry or target, case, imports).lines(name) for name, case in zip(names, cases)]
    parts = [f'"""Tests for {target.import_module}.{target.qualname}."""', ""]
    if imports.lines():
        parts += imports.lines() + ["", ""]
    for body in bodies:
        parts += body + ["", ""]
    return "\n".join(parts).rstrip("\n") + "\n", names


# Protocol methods written the way people spell them: name -> (template, arity); {o} is the object.
_PROTOCOL = {
    "__getitem__": ("{o}[{0}]", 1),
    "__len__": ("len({o})", 0),
    "__bool__": ("bool({o})", 0),
    "__iter__": ("iter({o})", 0),
    "__next__": ("next({o})", 0),
    "__reversed__": ("reversed({o})", 0),
    "__contains__": ("({0} in {o})", 1),
    "__str__": ("str({o})", 0),
    "__repr__": ("repr({o})", 0),
    "__hash__": ("hash({o})", 0),
}
# Statements (no value) for protocol methods that change the object.
_STATEMENTS = {"__setitem__": ("{o}[{0}] = {1}", 2), "__delitem__": ("del {o}[{0}]", 1), "__contains__": ("{0} in {o}", 1)}


def _exc_parts(name: str) -> tuple[str, str]:
    module, _, qualname = name.partition(":")
    return module, qualname


class _TestBody:
    """The lines of one test function."""

    def __init__(self, entry: TargetRef, case: TestCase, imports: Imports) -> None:
        self.entry = entry
        self.case = case
        self.imports = imports
        self.info = entry.info
        self.approx = Approx(rel=case.approx_rel)
        self.setup: list[str] = []
        self.local_names: set[str] = set()
        self.arg_names: dict[str, str] = {}
        self.receiver_name: str | None = None
        self.handles: dict[str, str] = {}
        # Names this test will import, known before any local is named so that no local shadows one.
        self.avoid = {entry.qualname.split(".")[0], str(case.expected.exc_qualname).split(".")[0]}
        for value in _values_of(case):
            self.avoid |= _class_names(value)

    # -- names --------------------------------------------------------------------------------------

    def _local(self, wanted: str) -> str:
        name = wanted if wanted.isidentifier() and not keyword.iskeyword(wanted) else f"{wanted}_value"
        while self.imports.is_taken(name) or name in self.local_names or name in self.avoid:
            name += "_value"
        self.local_names.add(name)
        return name

    def _param_name(self, index: int) -> str:
        positional = [p for p in self.info.params if p.kind in (ParamKind.POSITIONAL_ONLY, ParamKind.POSITIONAL_OR_KEYWORD)]
        return positional[index].name if index < len(positional) else f"arg{index}"

    def _expr(self, value: Value) -> str:
        return render(value, self.imports)

    # -- the receiver and its steps ---------------------------------------------------------------------

    def _receiver(self) -> str:
        if self.receiver_name is None:
            receiver = self.case.call.receiver
            assert receiver is not None
            lines = self._handles(receiver)
            named = receiver.v if receiver.t is ValueKind.ATTR else receiver.qualname  # `Stuff(...).machine`: machine
            self.receiver_name = self._local(snake(str(named).rsplit(".", 1)[-1]))
            lines.append(f"{self.receiver_name} = {self._receiver_expr(receiver)}")
            raises = self.case.expected.step_raises or []
            for i, step in enumerate(self.case.call.steps):
                lines += self._step_lines(step, raises[i] if i < len(raises) else None)
            self.setup[:0] = lines
        return self.receiver_name

    def _handles(self, receiver: Value) -> list[str]:
        """Bind the constructor arguments that steps act on (a timer given to a cache) to locals."""
        used = {s.on for s in [*self.case.call.steps, *self.case.call.then] if s.on}
        lines = []
        for key in sorted(used):
            kind, _, which = key.partition(":")
            value = (receiver.args or [])[int(which)] if kind == "arg" else (receiver.kw or {})[which]
            name = self._local(which if kind == "kw" else snake(str(value.qualname or "arg").rsplit(".", 1)[-1]))
            self.handles[key] = name
            lines.append(f"{name} = {self._expr(value)}")
        return lines

    def _receiver_expr(self, receiver: Value) -> str:
        handles = self.handles
        if receiver.t is not ValueKind.OBJECT or not handles:
            return self._expr(receiver)
        args = [handles.get(f"arg:{i}") or self._expr(a) for i, a in enumerate(receiver.args or [])]
        args += [f"{k}={handles.get(f'kw:{k}') or self._expr(v)}" for k, v in (receiver.kw or {}).items()]
        return f"{self.imports.name_for(str(receiver.module), str(receiver.qualname))}({', '.join(args)})"

    def _step_object(self, step: Step) -> str:
        return self.handles[step.on] if step.on else str(self.receiver_name)

    def _suppressed(self, raised: str, lines: list[str]) -> list[str]:
        module, qualname = _exc_parts(raised)
        suppress = self.imports.use_module("contextlib")
        return [f"with {suppress}.suppress({self.imports.name_for(module, qualname)}):"] + [INDENT + x for x in lines]

    def _step_lines(self, step: Step, raised: str | None) -> list[str]:
        obj = self._step_object(step)
        if step.name == "__next__" and not step.args and not step.kwargs:
            line, raised = f"next({obj}, None)", None  # a default instead of StopIteration
        else:
            line = self._method_expr(obj, step.name, step.args, step.kwargs, statement=True)
        lines = self._suppressed(raised, [line]) if raised is not None else [line]
        if step.repeat > 1:
            return [f"for _ in range({step.repeat}):"] + [INDENT + x for x in lines]
        return lines

    def _then_lines(self) -> list[str]:
        """The calls made after the recorded one, asserting those the case names, up to the last needed."""
        steps, state, facets = self.case.call.then, self.case.expected.state or {}, set(self.case.facets)
        asserted = [int(f.split(":")[1].split(".")[0]) for f in facets if f.startswith("then:")]
        later = any(f.startswith(("self.", "arg:")) for f in facets)
        last = len(steps) - 1 if later else max(asserted, default=-1)
        lines: list[str] = []
        for i, step in enumerate(steps[: last + 1]):
            obj = self._step_object(step)
            raised = state.get(f"then:{i}.raise")
            if step.repeat > 1:  # the same call made several times in a row: only the last one's result is known
                earlier = step.model_copy(update={"repeat": step.repeat - 1})
                lines += self._step_lines(earlier, str(raised.v) if raised is not None else None)
            expr = self._method_expr(obj, step.name, step.args, step.kwargs)
            if f"then:{i}.raise" in facets and raised is not None:
                module, qualname = _exc_parts(str(raised.v))
                exc = self.imports.name_for(module, qualname)
                lines += [f"with {self.imports.use_module('pytest')}.raises({exc}):", INDENT + expr]
            elif f"then:{i}" in facets:
                lines.append(self._compare(expr, state[f"then:{i}"]))
            elif f"then:{i}.list" in facets:
                lines.append(self._compare(f"list({expr})", state[f"then:{i}.list"]))
            elif raised is not None:
                lines += self._suppressed(str(raised.v), [self._method_expr(obj, step.name, step.args, step.kwargs, statement=True)])
            else:
                lines.append(self._method_expr(obj, step.name, step.args, step.kwargs, statement=True))
        return lines

    def _method_expr(self, obj: str, name: str, args: list[Value], kwargs: dict[str, Value], *, statement: bool = False,
                     rendered: list[str] | None = None) -> str:
        parts = rendered if rendered is not None else [self._expr(a) for a in args] + [
            f"{k}={self._expr(v)}" for k, v in kwargs.items()
        ]
        positional_only = len(parts) == len(args) and not kwargs
        table = {**_PROTOCOL, **(_STATEMENTS if statement else {})}
        if name in table and positional_only and len(args) == table[name][1]:
            return table[name][0].format(*parts, o=obj)
        if name == "__call__":
            return f"{obj}({', '.join(parts)})"
        return f"{obj}.{name}({', '.join(parts)})"

    # -- the call -------------------------------------------------------------------------------------

    def _call_expr(self, statement: bool = False) -> str:
        """The call as an expression, or as a statement when its value is not used (``cart[k] = v``)."""
        call, info = self.case.call, self.info
        asserted = {f.split(".", 1)[0][4:] for f in self.case.facets if f.startswith("arg:")}
        rendered = []
        for i, value in enumerate(call.args):
            rendered.append(self._bound(str(i), self._param_name(i), value) if str(i) in asserted else self._expr(value))
        for key, value in call.kwargs.items():
            rendered.append(f"{key}={self._bound(key, key, value) if key in asserted else self._expr(value)}")
        name = self.entry.qualname.rsplit(".", 1)[-1]
        if info.kind is TargetKind.PROPERTY:
            text = f"{self._receiver()}.{name}"
        elif info.kind is TargetKind.METHOD:
            text = self._method_expr(self._receiver(), name, call.args, call.kwargs, rendered=rendered, statement=statement)
        elif info.kind is TargetKind.FUNCTION:
            text = f"{self.imports.name_for(self.entry.import_module, self.entry.qualname)}({', '.join(rendered)})"
        else:
            owner = self.imports.name_for(self.entry.import_module, str(info.owner))
            text = f"{owner}({', '.join(rendered)})" if info.kind is TargetKind.CONSTRUCTOR else f"{owner}.{name}({', '.join(rendered)})"
        expected = self.case.expected
        if expected.awaited:
            text = f"{self.imports.use_module('asyncio')}.run({text})"
        elif expected.listed and expected.prefix is not None:
            text = f"list({self.imports.use_module('itertools')}.islice({text}, {expected.prefix}))"
        elif expected.listed:
            text = f"list({text})"
        elif expected.materialized:
            text = f"[list(part) for part in {text}]"
        return text

    def _bound(self, key: str, wanted: str, value: Value) -> str:
        """Bind an argument to a local first, so its state can be asserted after the call."""
        if key in self.arg_names:
            return self.arg_names[key]
        name = self._local(wanted)
        self.setup.append(f"{name} = {self._expr(value)}")
        self.arg_names[key] = name
        return name

    # -- assertions -----------------------------------------------------------------------------------

    def _compare(self, subject: str, value: Value) -> str:
        if value.t is ValueKind.NONE:
            return f"assert {subject} is None"
        if value.t is ValueKind.BOOL:
            return f"assert {subject} is {value.v!r}"
        return f"assert {subject} == {render(value, self.imports, self.approx)}"

    def _facet_subject(self, facet: str) -> str:
        """The expression whose value the facet is: ``self.len`` -> ``len(cart)``."""
        head, _, aspect = facet.partition(".")
        if head == "self":
            obj = self._receiver()
        elif head == "result":
            obj = "result"
        else:
            key = head[4:]
            obj = self.arg_names[key]
            if not aspect:
                spec = self.case.call.args[int(key)] if key.isdigit() else self.case.call.kwargs[key]
                return f"list({obj})" if spec.t is ValueKind.ITER else obj
        if aspect.startswith("attr:"):
            name, _, part = aspect[5:].partition(".")  # `attr:states.keys`: what a test writes of a mapping
            return {"": "{o}.{n}", "keys": "list({o}.{n})", "len": "len({o}.{n})"}[part].format(o=obj, n=name)
        if aspect == "head":
            items = (self.case.expected.state or {})[facet].items or []
            return f"list({self.imports.use_module('itertools')}.islice({obj}, {len(items)}))"
        return {"len": "len({o})", "list": "list({o})", "dict": "dict({o})", "rest": "list({o})"}[aspect].format(o=obj)

    def lines(self, test_name: str) -> list[str]:
        case, expected = self.case, self.case.expected
        call = self._call_expr()
        state = expected.state or {}
        needs_result = any(f.startswith("result.") for f in case.facets)
        body: list[str] = []
        if expected.kind is OutcomeKind.RAISE:
            body += self._raises(call)
        else:
            returned = expected.value if case.assert_return else None
            if needs_result or (returned is not None and case.facets):
                body.append(f"result = {call}")
                if returned is not None:
                    body.append(self._compare("result", returned))
            elif returned is not None:
                body.append(self._compare(call, returned))
            else:
                body.append(self._call_expr(statement=True) if not (expected.listed or expected.awaited) else call)
        # In the order the probe read them: the returned instance, the calls after, then the receiver and arguments.
        body += [self._compare(self._facet_subject(f), state[f]) for f in case.facets if f.startswith("result.")]
        if case.call.receiver is not None and case.call.then:
            self._receiver()
            body += self._then_lines()
        body += [self._compare(self._facet_subject(f), state[f]) for f in case.facets if f.startswith(("self.", "arg:"))]
        # The same seed the probe used: the expectations hold for this sequence of random numbers.
        seed = [f"{self.imports.use_module('random')}.seed({RANDOM_SEED})"] if expected.seeded else []
        return [f"def {test_name}():"] + [INDENT + line for line in seed + self.setup + body]

    def _raises(self, call: str) -> list[str]:
        expected = self.case.expected
        exc = self.imports.name_for(str(expected.exc_module), str(expected.exc_qualname))
        pytest_name = self.imports.use_module("pytest")
        match = f", match={regex_literal(expected.message or '')}" if self.case.match_message else ""
        bind = " as excinfo" if self.case.exact_type else ""
        out = [f"with {pytest_name}.raises({exc}{match}){bind}:", INDENT + call]
        if self.case.exact_type:
            out.append(f"assert excinfo.type is {exc}")
        return out


_REGEX_SPECIAL = set(".^$*+?{}[]\\|()")


def regex_literal(text: str) -> str:
    """A string literal of a regex matching ``text`` literally (escaping only what must be, unlike re.escape)."""
    escaped = "".join("\\" + c if c in _REGEX_SPECIAL else c for c in text)
    if "\\" in escaped and "'" not in escaped and "\n" not in escaped and not escaped.endswith("\\"):
        return f"r'{escaped}'"
    return repr(escaped)


def _values_of(case: TestCase) -> list[Value]:
    expected, call = case.expected, case.call
    out = [*call.args, *call.kwargs.values(), *(expected.state or {}).values()]
    for step in [*call.steps, *call.then]:
        out += [*step.args, *step.kwargs.values()]
    return out + [v for v in (call.receiver, expected.value) if v]


def _class_names(value: Value) -> set[str]:
    """Top-level names a value's source refers to (classes, functions, a lambda's globals)."""
    names = {value.qualname.split(".")[0]} if value.qualname else set()
    names |= set(value.names or {})
    for child in value.children():
        names |= _class_names(child)
    return names

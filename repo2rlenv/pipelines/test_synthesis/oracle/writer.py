"""Render chosen calls and their expected outcomes as a small, readable pytest file.

One test function per call: build the receiver (methods) and any argument whose state is asserted,
call through the public API, then assert the return value (``==``, ``pytest.approx`` for floats,
``is`` for None and booleans), the exception (``pytest.raises``), and the public attributes or mutated
arguments named by the case. The file says nothing about where the expectations came from.
"""

from __future__ import annotations

import keyword
import re

from pydantic import BaseModel, ConfigDict, Field

from repo2rlenv.pipelines.test_synthesis.oracle.records import CallSpec, Outcome, OutcomeKind, TargetInfo, TargetKind
from repo2rlenv.pipelines.test_synthesis.oracle.values import Approx, Imports, Value, ValueKind, render

INDENT = "    "


class TestCase(BaseModel):
    """One test to write: a call and what to assert about its (expected) outcome."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    __test__ = False  # not a pytest test class

    call: CallSpec
    expected: Outcome = Field(description="The outcome the test asserts.")
    assert_return: bool = Field(True, description="Assert the return value.")
    attrs: list[str] = Field(default_factory=list, description="Receiver attributes to assert after the call.")
    args: list[str] = Field(default_factory=list, description="Keys of `expected.args_after` to assert.")
    match_message: bool = Field(False, description="Also match the exception message.")
    exact_type: bool = Field(False, description="Assert the exception's exact type, not a subclass.")
    approx_rel: float | None = Field(None, description="Relative tolerance for floats; None = pytest.approx default.")


class TargetRef(BaseModel):
    """The function under test, by import path, with what the probe learned about it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    module: str
    qualname: str
    info: TargetInfo


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
    imports = Imports(reserved={"result", "excinfo"})
    stem = snake(target.qualname.replace(".", "_"))
    names = [f"test_{stem}_{n}" for n in range(1, len(cases) + 1)]
    bodies = [_TestBody(target, case, imports).lines(name) for name, case in zip(names, cases)]
    parts = [f'"""Tests for {target.module}.{target.qualname}."""', ""]
    if imports.lines():
        parts += imports.lines() + ["", ""]
    for body in bodies:
        parts += body + ["", ""]
    return "\n".join(parts).rstrip("\n") + "\n", names


class _TestBody:
    """The lines of one test function."""

    def __init__(self, target: TargetRef, case: TestCase, imports: Imports) -> None:
        self.target = target
        self.case = case
        self.imports = imports
        self.info = target.info
        self.approx = Approx(rel=case.approx_rel)
        self.setup: list[str] = []
        self.local_names: set[str] = set()
        self.arg_names: dict[str, str] = {}
        self.receiver_name: str | None = None
        # Names this test will import, known before any local is named so that no local shadows one.
        self.avoid = {target.qualname.split(".")[0], str(case.expected.exc_qualname).split(".")[0]}
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
        positional = [p for p in self.info.params if p.kind.value in ("positional_only", "positional_or_keyword")]
        return positional[index].name if index < len(positional) else f"arg{index}"

    # -- the call -------------------------------------------------------------------------------------

    def _call_expr(self) -> str:
        call, info = self.case.call, self.info
        receiver = self._receiver_name() if info.kind in (TargetKind.METHOD, TargetKind.PROPERTY) else ""
        asserted_args = set(self.case.args)
        args = []
        for i, value in enumerate(call.args):
            args.append(self._bound(str(i), self._param_name(i), value) if str(i) in asserted_args else self._expr(value))
        for key, value in call.kwargs.items():
            args.append(f"{key}={self._bound(key, key, value) if key in asserted_args else self._expr(value)}")
        name = self.target.qualname.rsplit(".", 1)[-1]
        if receiver:
            text = f"{receiver}.{name}" if info.kind is TargetKind.PROPERTY else f"{receiver}.{name}({', '.join(args)})"
        elif info.kind is TargetKind.FUNCTION:
            text = f"{self.imports.name_for(self.target.module, self.target.qualname)}({', '.join(args)})"
        else:
            owner = self.imports.name_for(self.target.module, str(info.owner))
            text = f"{owner}.{name}({', '.join(args)})"
        if self.case.expected.awaited:
            text = f"{self.imports.use_module('asyncio')}.run({text})"
        elif self.case.expected.listed:
            text = f"list({text})"
        return text

    def _expr(self, value: Value) -> str:
        return render(value, self.imports)

    def _bound(self, key: str, wanted: str, value: Value) -> str:
        """Bind an argument to a local first, so its state can be asserted after the call."""
        name = self._local(wanted)
        self.setup.append(f"{name} = {self._expr(value)}")
        self.arg_names[key] = name
        return name

    def _receiver_name(self) -> str:
        if self.receiver_name is None:
            receiver = self.case.call.receiver
            assert receiver is not None
            self.receiver_name = self._local(snake(str(receiver.qualname).rsplit(".", 1)[-1]))
            self.setup.insert(0, f"{self.receiver_name} = {self._expr(receiver)}")
        return self.receiver_name

    # -- assertions -----------------------------------------------------------------------------------

    def _compare(self, subject: str, value: Value) -> str:
        if value.t is ValueKind.NONE:
            return f"assert {subject} is None"
        if value.t is ValueKind.BOOL:
            return f"assert {subject} is {value.v!r}"
        return f"assert {subject} == {render(value, self.imports, self.approx)}"

    def lines(self, test_name: str) -> list[str]:
        case, expected = self.case, self.case.expected
        call = self._call_expr()
        body: list[str] = []
        if expected.kind is OutcomeKind.RAISE:
            body += self._raises(call)
        else:
            after = [
                self._compare(f"{self._receiver_name()}.{attr}", (expected.self_after or {})[attr]) for attr in case.attrs
            ]
            after += [self._compare(self.arg_names[key], (expected.args_after or {})[key]) for key in case.args]
            returned = expected.value if case.assert_return else None
            if returned is not None and not after:
                body.append(self._compare(call, returned))
            elif returned is not None:
                body += [f"result = {call}", self._compare("result", returned)] + after
            else:
                body += [call] + after
        return [f"def {test_name}():"] + [INDENT + line for line in self.setup + body]

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
    expected = case.expected
    out = [*case.call.args, *case.call.kwargs.values(), *(expected.self_after or {}).values()]
    out += [*(expected.args_after or {}).values()] + [v for v in (case.call.receiver, expected.value) if v]
    return out


def _class_names(value: Value) -> set[str]:
    """Top-level names of the classes a value's source refers to."""
    names = {value.qualname.split(".")[0]} if value.qualname else set()
    for child in value.children():
        names |= _class_names(child)
    return names

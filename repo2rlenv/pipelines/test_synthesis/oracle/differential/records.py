"""Pydantic models of what crosses the sandbox boundary: the probe's input calls and its three reports.

The probe (``probe.py``) is standalone and writes plain JSON; these models are the host's reading of
it, so a change of the probe's output shows up as a validation error here instead of a KeyError later.
"""

from __future__ import annotations

import json
from enum import StrEnum

from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from repo2rlenv.pipelines.test_synthesis.oracle.differential.values import Value, is_concrete


class TargetKind(StrEnum):
    """How the target is reached: a module function, or a member of a class."""

    FUNCTION = "function"
    METHOD = "method"
    CLASSMETHOD = "classmethod"
    STATICMETHOD = "staticmethod"
    PROPERTY = "property"
    CONSTRUCTOR = "constructor"  # `Owner.__init__`, called as `Owner(...)`


class ParamKind(StrEnum):
    """`inspect.Parameter.kind` names, lower-cased."""

    POSITIONAL_ONLY = "positional_only"
    POSITIONAL_OR_KEYWORD = "positional_or_keyword"
    VAR_POSITIONAL = "var_positional"
    KEYWORD_ONLY = "keyword_only"
    VAR_KEYWORD = "var_keyword"


class OutcomeKind(StrEnum):
    """What happened when a call was replayed."""

    RETURN = "return"
    RAISE = "raise"
    TIMEOUT = "timeout"
    ERROR = "error"  # the inputs could not be re-created (the call never ran)
    SKIPPED = "skipped"  # the replay ran out of its total time before this call


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Step(_Model):
    """A method call made on the receiver (or on an object passed to its constructor) around the recorded call."""

    on: str | None = Field(
        None, description="`arg:i` / `kw:name`: the receiver's constructor argument the call is made on; None: the receiver."
    )
    name: str = Field(description="Method name (dunders included: `__next__`, `__setitem__`).")
    args: list[Value] = Field(default_factory=list)
    kwargs: dict[str, Value] = Field(default_factory=dict)
    repeat: int = Field(1, ge=1, description="How many times in a row the same call was made.")

    def to_probe(self) -> dict:
        return {
            "on": self.on,
            "name": self.name,
            "args": [a.to_probe() for a in self.args],
            "kwargs": {k: v.to_probe() for k, v in self.kwargs.items()},
            "repeat": self.repeat,
        }


class CallSpec(_Model):
    """One call: of the target, or of a public entry that reaches it; the receiver for methods, and the arguments."""

    entry: str | None = Field(None, description="`module:qualname` of the function called, when not the target itself.")
    receiver: Value | None = Field(None, description="The instance a method is called on, as an `object`/`dataclass` spec.")
    steps: list[Step] = Field(default_factory=list, description="Method calls on the receiver before this call.")
    then: list[Step] = Field(
        default_factory=list, description="Method calls on the receiver after this call (their results are facets)."
    )
    args: list[Value] = Field(default_factory=list, description="Positional arguments.")
    kwargs: dict[str, Value] = Field(default_factory=dict, description="Keyword arguments.")

    def key(self) -> str:
        """A canonical text of the call, for de-duplication and stable ordering."""
        return json.dumps(self.to_probe(), sort_keys=True)

    def to_probe(self) -> dict:
        return {
            "entry": self.entry,
            "receiver": self.receiver.to_probe() if self.receiver else None,
            "steps": [s.to_probe() for s in self.steps],
            "then": [s.to_probe() for s in self.then],
            "args": [a.to_probe() for a in self.args],
            "kwargs": {k: v.to_probe() for k, v in self.kwargs.items()},
        }


class ParamInfo(_Model):
    """One parameter of the target (or of its class's constructor)."""

    name: str
    kind: ParamKind
    annotation: str | None = Field(None, description="The annotation as source text, if any.")
    has_default: bool = False
    default: Value | None = Field(None, description="The default, when it can be written down.")


class TargetInfo(_Model):
    """What the probe found out about the target by importing it."""

    kind: TargetKind
    owner: str | None = Field(None, description="Qualified name of the class, for class members.")
    is_async: bool = False
    is_generator: bool = False
    params: list[ParamInfo] = Field(default_factory=list, description="Parameters, without self/cls.")
    returns: str | None = Field(None, description="Return annotation as source text.")
    init_params: list[ParamInfo] | None = Field(
        None, description="Constructor parameters of the owner class (methods and properties only)."
    )
    constants: list[Value] = Field(
        default_factory=list, description="Module-level numbers and strings the function reads by name."
    )
    import_from: str | None = Field(
        None, description="Public module to import the function (or its class) from, when a parent package re-exports it."
    )


class _Report(_Model):
    error: str | None = Field(None, description="Why the probe could not do its job, if it could not.")
    trace: str | None = Field(None, description="Tail of the probe's traceback when `error` is set.")


class RecordedCall(_Model):
    """A call seen while the existing tests ran."""

    call: CallSpec
    types: dict[str, str] = Field(default_factory=dict, description="Parameter name -> type of the argument seen.")


class EntryReport(_Model):
    """A function whose calls were recorded: the target itself, or a public function or method reaching it."""

    module: str
    qualname: str
    target: TargetInfo
    calls: list[RecordedCall] = Field(default_factory=list)

    @property
    def key(self) -> str:
        return f"{self.module}:{self.qualname}"


class HarvestReport(_Report):
    """Output of ``probe.py harvest``."""

    target: TargetInfo | None = None
    entries: list[EntryReport] = Field(
        default_factory=list, description="The target when its name is public, else the public callers reaching it."
    )
    skipped: dict[str, int] = Field(
        default_factory=dict, description="Calls seen but not recorded, by why (the type that cannot be re-created)."
    )
    tests_exit_code: int | None = Field(None, description="pytest's exit code for the covering tests.")
    cut: bool = Field(False, description="The harvest stopped at its time limit before running every test.")


class Outcome(_Model):
    """The result of one replayed call (facet names: see ``probe_replay.py``)."""

    kind: OutcomeKind
    value: Value | None = Field(None, description="Return value (opaque when it cannot be re-created).")
    awaited: bool = Field(False, description="The call returned a coroutine, which was run to completion.")
    listed: bool = Field(False, description="The call returned an iterator, which was consumed into a list.")
    prefix: int | None = Field(None, description="The returned iterator did not end: `value` holds its first items.")
    materialized: bool = Field(False, description="The call returned a tuple/list of iterators, each consumed into a list.")
    seeded: bool = Field(False, description="The call drew from `random`, seeded before the call (probe's RANDOM_SEED).")
    step_raises: list[str | None] | None = Field(
        None, description="Per receiver step, the exception type it raised (None: it did not)."
    )
    exc_module: str | None = None
    exc_qualname: str | None = None
    exc_importable: bool = False
    message: str | None = Field(None, description="str() of the exception (or why the inputs failed).")
    state: dict[str, Value] | None = Field(
        None, description="Facets observed after the call (receiver, returned instance, arguments), in reading order."
    )

    def facets(self, concrete: bool = True) -> dict[str, Value]:
        """The separately assertable parts of this outcome, by facet name (with ``concrete=False``, also the
        parts that cannot be written in a test, for telling why a difference could not be asserted)."""
        if self.kind is OutcomeKind.RAISE:
            out = {"raise.message": Value(t="str", v=self.message or "")}
            if self.exc_importable:
                out["raise.type"] = Value(t="str", v=f"{self.exc_module}.{self.exc_qualname}")
            out.update(self.state or {})
            return {k: v for k, v in out.items() if not concrete or is_concrete(v)}
        if self.kind is not OutcomeKind.RETURN:
            return {}
        out = {"return": self.value} if self.value is not None else {}
        out.update(self.state or {})
        return {k: v for k, v in out.items() if not concrete or is_concrete(v)}


class ReplayReport(_Report):
    """Output of ``probe.py replay``: one outcome per call, in order."""

    outcomes: list[Outcome] = Field(default_factory=list)


class CheckReport(_Report):
    """Output of ``probe.py check``: each test function's outcome."""

    exit_code: int | None = None
    results: dict[str, str] = Field(default_factory=dict, description="Test function name -> passed/failed/skipped.")
    collection_errors: list[str] = Field(default_factory=list)


_Report = TypeVar("_Report", bound=BaseModel)


def read_report(model: type[_Report], text: str) -> _Report:
    """`model` from the probe's JSON text. Python's json reads it, not pydantic's: values a suite passes
    (mdurl's tests encode lone surrogates such as "\\ud800") are valid for `json.dumps`/`json.loads` but
    rejected by a strict JSON parser. Raises ValidationError when the text is not JSON or not the model."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ValidationError.from_exception_data(model.__name__, [
            {"type": "json_invalid", "loc": (), "input": text[:200], "ctx": {"error": str(exc)}}]) from exc
    return model.model_validate(data)

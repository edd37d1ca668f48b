"""Pydantic models of what crosses the sandbox boundary: the probe's input calls and its three reports.

The probe (``probe.py``) is standalone and writes plain JSON; these models are the host's reading of
it, so a change of the probe's output shows up as a validation error here instead of a KeyError later.
"""

from __future__ import annotations

import json
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from repo2rlenv.pipelines.test_synthesis.oracle.values import Value, is_concrete


class TargetKind(StrEnum):
    """How the target is reached: a module function, or a member of a class."""

    FUNCTION = "function"
    METHOD = "method"
    CLASSMETHOD = "classmethod"
    STATICMETHOD = "staticmethod"
    PROPERTY = "property"


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


class CallSpec(_Model):
    """One call of the target: the receiver for methods and properties, and the arguments."""

    receiver: Value | None = Field(None, description="The instance a method is called on, as an `object`/`dataclass` spec.")
    args: list[Value] = Field(default_factory=list, description="Positional arguments.")
    kwargs: dict[str, Value] = Field(default_factory=dict, description="Keyword arguments.")

    def key(self) -> str:
        """A canonical text of the call, for de-duplication and stable ordering."""
        return json.dumps(self.to_probe(), sort_keys=True)

    def to_probe(self) -> dict:
        return {
            "receiver": self.receiver.to_probe() if self.receiver else None,
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


class _Report(_Model):
    error: str | None = Field(None, description="Why the probe could not do its job, if it could not.")
    trace: str | None = Field(None, description="Tail of the probe's traceback when `error` is set.")


class RecordedCall(_Model):
    """A call seen while the existing tests ran."""

    call: CallSpec
    types: dict[str, str] = Field(default_factory=dict, description="Parameter name -> type of the argument seen.")


class HarvestReport(_Report):
    """Output of ``probe.py harvest``."""

    target: TargetInfo | None = None
    calls: list[RecordedCall] = Field(default_factory=list)
    skipped: int = Field(0, description="Calls seen but not recorded (arguments that cannot be re-created).")
    tests_exit_code: int | None = Field(None, description="pytest's exit code for the covering tests.")


class Outcome(_Model):
    """The result of one replayed call."""

    kind: OutcomeKind
    value: Value | None = Field(None, description="Return value (opaque when it cannot be re-created).")
    awaited: bool = Field(False, description="The call returned a coroutine, which was run to completion.")
    listed: bool = Field(False, description="The call returned a generator, which was consumed into a list.")
    exc_module: str | None = None
    exc_qualname: str | None = None
    exc_importable: bool = False
    message: str | None = Field(None, description="str() of the exception (or why the inputs failed).")
    self_after: dict[str, Value] | None = Field(None, description="Public attributes of the receiver after the call.")
    args_after: dict[str, Value] | None = Field(
        None, description="Mutable arguments after the call: positional index or keyword name -> value."
    )

    def facets(self) -> dict[str, Value]:
        """The separately assertable parts of this outcome, by facet name."""
        if self.kind is OutcomeKind.RAISE:
            out = {"raise.message": Value(t="str", v=self.message or "")}
            if self.exc_importable:
                out["raise.type"] = Value(t="str", v=f"{self.exc_module}.{self.exc_qualname}")
            return out
        if self.kind is not OutcomeKind.RETURN:
            return {}
        out = {"return": self.value} if self.value is not None else {}
        out.update({f"attr:{k}": v for k, v in (self.self_after or {}).items()})
        out.update({f"arg:{k}": v for k, v in (self.args_after or {}).items()})
        return {k: v for k, v in out.items() if is_concrete(v)}


class ReplayReport(_Report):
    """Output of ``probe.py replay``: one outcome per call, in order."""

    outcomes: list[Outcome] = Field(default_factory=list)


class CheckReport(_Report):
    """Output of ``probe.py check``: each test function's outcome."""

    exit_code: int | None = None
    results: dict[str, str] = Field(default_factory=dict, description="Test function name -> passed/failed/skipped.")
    collection_errors: list[str] = Field(default_factory=list)

"""Probe run inside a sandboxed copy of a repo: record, replay and check calls of one function.

Standalone on purpose: it is copied next to the repo and run as
``python probe.py <harvest|replay|check> --spec IN.json --out OUT.json`` with the repo root as the
working directory and its import root on PYTHONPATH. It needs only the standard library and pytest
(and runs on the repo's own Python, so it avoids syntax newer than 3.8). It is one file, not a
package, because the sandbox receives it as a single file.

- ``harvest`` runs the given tests under a profile hook that fires for the target function only and
  records each call's arguments as *value specs* (JSON that re-creates the value), plus the
  function's signature.
- ``replay`` re-creates each recorded call, runs it under a per-call time limit and records the
  outcome (return value or exception, and the public state of the receiver and of mutable arguments).
- ``check`` writes a pytest file into the repo and reports each test's outcome.

Value specs are plain dicts tagged by ``t``; the host reads them with ``oracle.values.Value``.
Output is deterministic: every dict is built in a fixed order (declaration order for fields, sorted
names for attributes, sorted items for sets).
Whatever goes wrong inside a call is an outcome, never a crash: the probe always writes OUT.json.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import datetime
import decimal
import enum
import fractions
import hashlib
import importlib
import inspect
import itertools
import json
import os
import re
import signal
import sys
import threading
import time
import traceback
import weakref

# Bounds on what one value spec may hold: bigger values are not worth asserting in a readable test.
MAX_DEPTH = 5
MAX_ITEMS = 64
MAX_NODES = 2000
MAX_TEXT = 2000
MAX_CALLS = 200
MAX_LISTED = 1000

CO_VARARGS = 0x04
CO_VARKEYWORDS = 0x08
CO_GENERATOR_LIKE = 0x20 | 0x80 | 0x200  # generator, coroutine, async generator

# Stdlib value types re-created by calling the class: value -> (positional args, keyword args).
# Zero-valued trailing parts are left out so the rendered call reads like hand-written code.
STDLIB_VALUES = {
    decimal.Decimal: lambda v: ([str(v)], {}),
    fractions.Fraction: lambda v: ([v.numerator, v.denominator], {}),
    datetime.date: lambda v: ([v.year, v.month, v.day], {}),
    datetime.datetime: lambda v: (
        [v.year, v.month, v.day],
        {k: getattr(v, k) for k in ("hour", "minute", "second", "microsecond") if getattr(v, k)},
    ),
    datetime.time: lambda v: ([], {k: getattr(v, k) for k in ("hour", "minute", "second", "microsecond") if getattr(v, k)}),
    datetime.timedelta: lambda v: ([], {k: getattr(v, k) for k in ("days", "seconds", "microseconds") if getattr(v, k)}),
}
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


class CallTimeout(BaseException):
    """Raised by the alarm inside a call that ran past its time limit (BaseException: not swallowed)."""


class Unrecreatable(Exception):
    """A value spec that cannot be turned back into a value here."""


# --------------------------------------------------------------------------------------- resolving


def resolve(module, qualname, allow_import=True):
    """The object named ``module:qualname``; raises LookupError when it cannot be reached by name."""
    if "<locals>" in qualname or module in (None, "__main__"):
        raise LookupError("%s.%s is not importable" % (module, qualname))
    mod = sys.modules.get(module)
    if mod is None:
        if not allow_import:
            raise LookupError(module)
        mod = importlib.import_module(module)
    obj = mod
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def type_name(obj):
    cls = type(obj)
    return "%s.%s" % (cls.__module__, cls.__qualname__)


def is_reachable(cls, allow_import=True):
    try:
        return resolve(cls.__module__, cls.__qualname__, allow_import) is cls
    except Exception:
        return False


def canonical(spec):
    return json.dumps(spec, sort_keys=True)


# ---------------------------------------------------------------------------------------- encoding


class Encoder:
    """Turns Python values into value specs (None when a value cannot be re-created).

    ``constructors`` maps id(instance) to the recorded ``__init__`` arguments of instances created
    during harvest; such instances are re-created by calling their class again. Outputs
    (``for_output``) never use them: a re-constructed object does not compare equal by value.
    """

    def __init__(self, constructors=None, for_output=False, allow_import=True):
        self.constructors = constructors if constructors is not None else {}
        self.for_output = for_output
        self.allow_import = allow_import
        self.nodes = 0

    def encode(self, obj):
        self.nodes = 0
        try:
            return self._enc(obj, 0)
        except Exception:
            return None

    def _class_ok(self, cls):
        return is_reachable(cls, self.allow_import)

    def _enc(self, obj, depth):
        self.nodes += 1
        if self.nodes > MAX_NODES or depth > MAX_DEPTH:
            return None
        cls = type(obj)
        if obj is None:
            return {"t": "none"}
        if cls is bool:
            return {"t": "bool", "v": obj}
        if cls is int:
            return {"t": "int", "v": obj}
        if cls is float:
            return {"t": "float", "v": repr(obj)}
        if cls is str:
            return {"t": "str", "v": obj} if len(obj) <= MAX_TEXT else None
        if cls is bytes:
            return {"t": "bytes", "v": obj.hex()} if len(obj) <= MAX_TEXT else None
        if cls in (list, tuple, set, frozenset):
            return self._enc_items(obj, cls.__name__, depth)
        if cls is dict:
            return self._enc_dict(obj, depth)
        if isinstance(obj, enum.Enum):
            return {"t": "enum", "module": cls.__module__, "qualname": cls.__qualname__, "v": obj.name} if self._class_ok(cls) else None
        if isinstance(obj, tuple) and hasattr(cls, "_fields"):
            return self._enc_fields("namedtuple", obj, list(cls._fields), depth)
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            if self.for_output and not cls.__dataclass_params__.eq:
                return None
            names = [f.name for f in dataclasses.fields(obj) if f.init]
            return self._enc_fields("dataclass", obj, names, depth)
        if cls in STDLIB_VALUES and not getattr(obj, "tzinfo", None):
            args, kw = STDLIB_VALUES[cls](obj)
            return self._object(cls, args, kw, depth)
        if not self.for_output:
            return self._enc_constructed(obj, depth)
        return None

    def _enc_items(self, obj, tag, depth):
        if len(obj) > MAX_ITEMS:
            return None
        items = [self._enc(x, depth + 1) for x in obj]
        if any(x is None for x in items):
            return None
        if tag in ("set", "frozenset"):
            # Set iteration order depends on hashing; sort for a stable spec.
            items.sort(key=canonical)
        return {"t": tag, "items": items}

    def _enc_dict(self, obj, depth):
        if len(obj) > MAX_ITEMS:
            return None
        pairs = []
        for key, value in obj.items():
            k, v = self._enc(key, depth + 1), self._enc(value, depth + 1)
            if k is None or v is None:
                return None
            pairs.append([k, v])
        return {"t": "dict", "pairs": pairs}

    def _enc_fields(self, tag, obj, names, depth):
        cls = type(obj)
        if not self._class_ok(cls):
            return None
        fields = {}
        for name in names:
            spec = self._enc(getattr(obj, name), depth + 1)
            if spec is None:
                return None
            fields[name] = spec
        return {"t": tag, "module": cls.__module__, "qualname": cls.__qualname__, "fields": fields}

    def _object(self, cls, args, kw, depth):
        if not self._class_ok(cls):
            return None
        a = [self._enc(x, depth + 1) for x in args]
        k = {name: self._enc(x, depth + 1) for name, x in kw.items()}
        if any(x is None for x in a) or any(x is None for x in k.values()):
            return None
        return {"t": "object", "module": cls.__module__, "qualname": cls.__qualname__, "args": a, "kw": k}

    def _enc_constructed(self, obj, depth):
        record = self.constructors.get(id(obj))
        if record is not None and record[0]() is obj:
            return record[1]
        cls = type(obj)
        # A class without its own constructor and without state is re-created by a bare call.
        if cls.__init__ is object.__init__ and not getattr(obj, "__dict__", True) and not hasattr(cls, "__slots__"):
            return self._object(cls, [], {}, depth)
        return None


def opaque(obj):
    """A comparable stand-in for a value that cannot be re-created (memory addresses removed)."""
    try:
        text = _ADDRESS.sub("", repr(obj))
    except Exception:
        text = "<unrepresentable>"
    return {"t": "opaque", "type": type_name(obj), "v": hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:16]}


def encode_output(obj):
    spec = Encoder(for_output=True).encode(obj)
    return spec if spec is not None else opaque(obj)


# ---------------------------------------------------------------------------------------- decoding


def decode(spec):
    tag = spec["t"]
    if tag == "none":
        return None
    if tag in ("bool", "int", "str"):
        return spec["v"]
    if tag == "float":
        return float(spec["v"])
    if tag == "bytes":
        return bytes.fromhex(spec["v"])
    if tag in ("list", "tuple", "set", "frozenset"):
        builder = {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}[tag]
        return builder(decode(x) for x in spec["items"])
    if tag == "dict":
        return {decode(k): decode(v) for k, v in spec["pairs"]}
    if tag == "enum":
        return resolve(spec["module"], spec["qualname"])[spec["v"]]
    if tag in ("dataclass", "namedtuple"):
        cls = resolve(spec["module"], spec["qualname"])
        return cls(**{name: decode(v) for name, v in spec["fields"].items()})
    if tag == "object":
        cls = resolve(spec["module"], spec["qualname"])
        return cls(*[decode(x) for x in spec["args"]], **{k: decode(v) for k, v in spec["kw"].items()})
    raise Unrecreatable(tag)


# ------------------------------------------------------------------------------------------ target


def describe_target(module, qualname):
    """Kind, flags and signature of the target (methods without their receiver parameter)."""
    name = qualname.rsplit(".", 1)[-1]
    owner_name = qualname.rsplit(".", 1)[0] if "." in qualname else None
    if owner_name is not None and name.startswith("__") and not name.endswith("__"):
        # A name-mangled method is private to its class: no public-API test can call it directly.
        raise LookupError("%s is a private name-mangled method" % qualname)
    kind, owner, func = "function", None, None
    if owner_name is not None:
        owner = resolve(module, owner_name)
        if not isinstance(owner, type):
            raise LookupError("%s is not a class" % owner_name)
        raw = inspect.getattr_static(owner, name)
        if isinstance(raw, staticmethod):
            kind, func = "staticmethod", raw.__func__
        elif isinstance(raw, classmethod):
            kind, func = "classmethod", raw.__func__
        elif isinstance(raw, property):
            kind, func = "property", raw.fget
        else:
            kind, func = "method", raw
    else:
        func = resolve(module, qualname)
    inner = inspect.unwrap(func)
    info = {
        "constants": referenced_constants(inner),
        "kind": kind,
        "owner": owner_name,
        "is_async": inspect.iscoroutinefunction(inner),
        "is_generator": inspect.isgeneratorfunction(inner),
        "params": [],
        "returns": None,
        "init_params": None,
    }
    try:
        sig = inspect.signature(func)
        params = list(sig.parameters.values())
        if kind in ("method", "classmethod", "property") and params:
            params = params[1:]
        info["params"] = [param_info(p) for p in params]
        if sig.return_annotation is not inspect.Signature.empty:
            info["returns"] = annotation_text(sig.return_annotation)
    except (TypeError, ValueError):
        pass
    if kind in ("method", "property") and owner.__init__ is not object.__init__:
        try:
            init = list(inspect.signature(owner.__init__).parameters.values())[1:]
            info["init_params"] = [param_info(p) for p in init]
        except (TypeError, ValueError):
            pass
    elif kind in ("method", "property"):
        info["init_params"] = []
    return info, func


MAX_CONSTANTS = 32


def referenced_constants(func):
    """Module-level numbers and short strings the function's code reads by name (also inside small containers).

    A threshold kept in a named constant (``if total >= FREE_SHIPPING_THRESHOLD``) is as much a boundary as
    a literal, but the function's source text does not show its value.
    """
    code = getattr(func, "__code__", None)
    if code is None:
        return []
    names, stack = set(), [code]
    while stack:
        current = stack.pop()
        names.update(current.co_names)
        stack.extend(c for c in current.co_consts if inspect.iscode(c))
    encoder = Encoder(for_output=True)
    out, seen = [], set()
    for name in sorted(names):
        value = func.__globals__.get(name)
        if isinstance(value, dict):
            members = list(value.keys()) + list(value.values())
        elif type(value) in (list, tuple, set, frozenset):
            members = list(value)
        else:
            members = [value]
        if len(members) > MAX_CONSTANTS:
            continue
        for member in members:
            if type(member) in (int, float) or (type(member) is str and len(member) <= 20):
                spec = encoder.encode(member)
                if canonical(spec) not in seen:
                    seen.add(canonical(spec))
                    out.append(spec)
    return out[:MAX_CONSTANTS]


def annotation_text(annotation):
    if annotation is inspect.Parameter.empty:
        return None
    if isinstance(annotation, str):
        return annotation
    return inspect.formatannotation(annotation)


def param_info(param):
    has_default = param.default is not inspect.Parameter.empty
    return {
        "name": param.name,
        "kind": param.kind.name.lower(),
        "annotation": annotation_text(param.annotation),
        "has_default": has_default,
        "default": Encoder(for_output=True).encode(param.default) if has_default else None,
    }


def defaults_of(func):
    """Parameter name -> default object, read from the function (after unwrapping decorators)."""
    if func is None:
        return {}
    func = inspect.unwrap(func)
    code = getattr(func, "__code__", None)
    if code is None:
        return {}
    positional = code.co_varnames[: code.co_argcount]
    values = func.__defaults__ or ()
    out = dict(zip(positional[len(positional) - len(values):], values))
    out.update(func.__kwdefaults__ or {})
    return out


_NO_DEFAULT = object()


def bind_frame(code, f_locals, defaults, skip_first, encoder):
    """A call's arguments from its frame at entry: (args, kwargs) of value specs; raises Unrecreatable.

    Parameters after the first one with a default are passed by keyword and left out when they
    hold their default (the very object, or an equal spec), which is how a person writes the call.
    A default that cannot be re-created (a module-level instance) is fine as long as it is left out.
    """
    names = code.co_varnames
    n_pos, n_kwonly, n_posonly = code.co_argcount, code.co_kwonlyargcount, code.co_posonlyargcount
    positional = list(names[:n_pos])
    kwonly = list(names[n_pos:n_pos + n_kwonly])
    idx = n_pos + n_kwonly
    varargs = varkw = None
    if code.co_flags & CO_VARARGS:
        varargs, idx = names[idx], idx + 1
    if code.co_flags & CO_VARKEYWORDS:
        varkw = names[idx]
    if skip_first:
        positional, n_posonly = positional[1:], max(0, n_posonly - 1)
    extra = tuple(f_locals.get(varargs, ())) if varargs else ()
    args, kwargs, by_keyword = [], {}, False

    def spec_of(value):
        spec = encoder.encode(value)
        if spec is None:
            raise Unrecreatable(type_name(value))
        return spec

    def keyword(name):
        value, default = f_locals[name], defaults.get(name, _NO_DEFAULT)
        if value is default:
            return
        spec = spec_of(value)
        if default is _NO_DEFAULT or canonical(spec) != canonical(Encoder(for_output=True).encode(default)):
            kwargs[name] = spec

    for j, name in enumerate(positional):
        if not extra and j >= n_posonly and name in defaults:
            by_keyword = True
        if by_keyword:
            keyword(name)
        else:
            args.append(spec_of(f_locals[name]))
    args.extend(spec_of(v) for v in extra)
    for name in kwonly:
        keyword(name)
    if varkw:
        for name, value in f_locals.get(varkw, {}).items():
            kwargs[name] = spec_of(value)
    return args, kwargs


# ----------------------------------------------------------------------------------------- harvest


class Harvester:
    """The profile hook: records calls of the target and constructor calls of the package's classes."""

    def __init__(self, spec):
        self.module = spec["module"]
        self.qualname = spec["qualname"]
        self.name = self.qualname.rsplit(".", 1)[-1]
        self.target_real = os.path.realpath(spec["target_file"])
        self.def_lines = def_lines(self.target_real, self.qualname)
        parts = self.module.split(".")
        self.suffixes = (os.sep.join(parts) + ".py", os.sep.join(parts + ["__init__.py"]))
        self.package = parts[0]
        self.max_calls = int(spec.get("max_calls", MAX_CALLS))
        self.constructors = {}
        self.codes = {}
        self.resume_offsets = {}
        self.calls = {}
        self.skipped = 0
        self.target = None  # (info, func) once the module is importable
        self.encoder = Encoder(self.constructors, allow_import=False)

    def _classify(self, code):
        if code.co_name == "__init__":
            return "init"
        if code.co_name != self.name:
            return ""
        if getattr(code, "co_qualname", self.qualname) != self.qualname:
            return ""
        if not hasattr(code, "co_qualname") and self.def_lines and code.co_firstlineno not in self.def_lines:
            return ""  # before 3.11: a same-named function elsewhere in the file
        path = code.co_filename
        if os.path.realpath(path) == self.target_real or path.endswith(self.suffixes):
            return "target"
        return ""

    def hook(self, frame, event, arg):
        if event != "call":
            return
        try:
            code = frame.f_code
            role = self.codes.get(code)
            if role is None:
                role = self.codes[code] = self._classify(code)
            if role == "init":
                self._record_init(frame, code)
            elif role == "target":
                self._record_call(frame, code)
        except Exception:
            self.skipped += 1

    def _record_init(self, frame, code):
        if not code.co_argcount:
            return
        obj = frame.f_locals.get(code.co_varnames[0])
        cls = type(obj)
        if not str(getattr(cls, "__module__", "")).split(".")[0] == self.package or id(obj) in self.constructors:
            return
        func = None
        for klass in cls.__mro__:
            candidate = klass.__dict__.get("__init__")
            if getattr(candidate, "__code__", None) is code:
                func = candidate
                break
        if func is None:
            return
        try:
            args, kwargs = bind_frame(code, frame.f_locals, defaults_of(func), True, self.encoder)
            spec = {"t": "object", "module": cls.__module__, "qualname": cls.__qualname__, "args": args, "kw": kwargs}
        except Unrecreatable:
            return
        key = id(obj)
        try:
            ref = weakref.ref(obj, lambda _r, k=key, d=self.constructors: d.pop(k, None))
        except TypeError:
            ref = (lambda o: (lambda: o))(obj)  # not weak-referenceable: keep it alive so the id stays its own
        self.constructors[key] = (ref, spec)

    def _first_resume(self, code):
        if code not in self.resume_offsets:
            self.resume_offsets[code] = first_resume(code)
        return self.resume_offsets[code]

    def _target(self):
        if self.target is None:
            self.target = describe_target(self.module, self.qualname)
        return self.target

    def _record_call(self, frame, code):
        if len(self.calls) >= self.max_calls:
            return
        if code.co_flags & CO_GENERATOR_LIKE and frame.f_lasti > self._first_resume(code):
            return  # a generator or coroutine being resumed, not called
        info, func = self._target()
        kind = info["kind"]
        receiver = None
        if kind in ("method", "property"):
            receiver = self.encoder.encode(frame.f_locals.get(code.co_varnames[0]))
            if receiver is None:
                self.skipped += 1
                return
        try:
            args, kwargs = bind_frame(code, frame.f_locals, defaults_of(func), kind in ("method", "classmethod", "property"), self.encoder)
        except Unrecreatable:
            self.skipped += 1
            return
        call = {"receiver": receiver, "args": args, "kwargs": kwargs}
        key = canonical(call)
        if key not in self.calls:
            n = code.co_argcount + code.co_kwonlyargcount
            types = {name: type_name(frame.f_locals[name]) for name in code.co_varnames[:n] if name in frame.f_locals}
            self.calls[key] = {"call": call, "types": types}


def def_lines(path, qualname):
    """Lines a code object of ``qualname`` in ``path`` may start at (its def, or its first decorator)."""
    import ast

    try:
        with open(path, encoding="utf-8") as fh:
            nodes = ast.parse(fh.read()).body
    except (OSError, SyntaxError, ValueError):
        return set()
    node = None
    for part in qualname.split("."):
        node = next((n for n in nodes if getattr(n, "name", None) == part), None)
        if node is None:
            return set()
        nodes = getattr(node, "body", [])
    return {node.lineno} | {d.lineno for d in getattr(node, "decorator_list", [])[:1]}


def first_resume(code):
    """Offset of the instruction a generator's first entry stops at (later entries are resumptions)."""
    import dis

    for ins in dis.get_instructions(code):
        if ins.opname == "RESUME":
            return ins.offset
    return 0


def harvest(spec):
    import pytest

    harvester = Harvester(spec)

    class Profiling:
        """Profiles each test's setup, call and teardown only: pytest's own start-up is a million calls."""

        @pytest.hookimpl(hookwrapper=True)
        def pytest_runtest_protocol(self, item, nextitem):
            threading.setprofile(harvester.hook)
            sys.setprofile(harvester.hook)
            try:
                yield
            finally:
                sys.setprofile(None)
                threading.setprofile(None)

    exit_code = None
    if spec.get("tests"):
        argv = list(spec["tests"]) + ["-q", "-p", "no:cacheprovider"]
        exit_code = int(pytest.main(argv, plugins=[Profiling()]))
    info, _func = describe_target(harvester.module, harvester.qualname)
    return {
        "target": info,
        "calls": list(harvester.calls.values()),
        "skipped": harvester.skipped,
        "tests_exit_code": exit_code,
        "error": None,
    }


# ------------------------------------------------------------------------------------------ replay


class Alarm:
    """A per-call wall-clock limit (SIGALRM; the probe runs in its process's main thread)."""

    def __init__(self, seconds):
        self.seconds = seconds

    def _fire(self, signum, frame):
        raise CallTimeout()

    def __enter__(self):
        self.previous = signal.signal(signal.SIGALRM, self._fire)
        signal.setitimer(signal.ITIMER_REAL, self.seconds)
        return self

    def __exit__(self, *exc):
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, self.previous)
        return False


def public_state(obj):
    names = set(getattr(obj, "__dict__", {}) or {})
    for klass in type(obj).__mro__:
        slots = klass.__dict__.get("__slots__", ())
        names.update([slots] if isinstance(slots, str) else slots)
    state = {}
    for name in sorted(names):
        if name.startswith("_") or not hasattr(obj, name):
            continue
        state[name] = encode_output(getattr(obj, name))
    return state


MUTABLE_TAGS = ("list", "dict", "set", "dataclass")


def rebuild_inputs(call):
    """The receiver (or None), positional and keyword arguments of one call spec."""
    receiver = decode(call["receiver"]) if call.get("receiver") else None
    args = [decode(x) for x in call["args"]]
    kwargs = {k: decode(v) for k, v in call["kwargs"].items()}
    return receiver, args, kwargs


def run_call(target, info, name, call, seconds):
    kind = info["kind"]
    try:
        with Alarm(seconds):
            receiver, args, kwargs = rebuild_inputs(call)
    except CallTimeout:
        return {"kind": "timeout"}
    except BaseException as exc:
        return {"kind": "error", "message": "%s: %s" % (type_name(exc), safe_str(exc))}
    outcome = {"kind": "return"}
    try:
        with Alarm(seconds):
            if kind == "property":
                result = getattr(receiver, name)
            elif kind == "method":
                result = getattr(receiver, name)(*args, **kwargs)
            elif kind in ("classmethod", "staticmethod"):
                result = getattr(target[0], name)(*args, **kwargs)
            else:
                result = target[1](*args, **kwargs)
            if inspect.iscoroutine(result):
                result = asyncio.run(result)
                outcome["awaited"] = True
            elif inspect.isgenerator(result):
                result = list(itertools.islice(result, MAX_LISTED + 1))
                outcome["listed"] = True
        outcome["value"] = encode_output(result) if not (outcome.get("listed") and len(result) > MAX_LISTED) else opaque(result)
    except CallTimeout:
        return {"kind": "timeout"}
    except BaseException as exc:
        cls = type(exc)
        outcome = {
            "kind": "raise",
            "exc_module": cls.__module__,
            "exc_qualname": cls.__qualname__,
            "exc_importable": cls.__module__ == "builtins" or is_reachable(cls),
            "message": safe_str(exc),
        }
    if receiver is not None and kind == "method":
        outcome["self_after"] = public_state(receiver)
    after = {}
    for i, spec in enumerate(call["args"]):
        if spec["t"] in MUTABLE_TAGS:
            after[str(i)] = encode_output(args[i])
    for key, spec in call["kwargs"].items():
        if spec["t"] in MUTABLE_TAGS:
            after[key] = encode_output(kwargs[key])
    if after:
        outcome["args_after"] = after
    return outcome


def safe_str(exc):
    try:
        return _ADDRESS.sub("", str(exc))[:MAX_TEXT]
    except Exception:
        return "<unprintable>"


def replay(spec):
    module, qualname = spec["module"], spec["qualname"]
    name = qualname.rsplit(".", 1)[-1]
    info, func = describe_target(module, qualname)
    owner = resolve(module, info["owner"]) if info["owner"] else None
    public = getattr(owner, name) if owner is not None else resolve(module, qualname)
    seconds = float(spec.get("call_timeout", 2.0))
    deadline = time.monotonic() + float(spec.get("total_timeout", 300.0))
    outcomes = []
    for call in spec["calls"]:
        if time.monotonic() > deadline:
            outcomes.append({"kind": "skipped"})
            continue
        outcomes.append(run_call((owner, public), info, name, call, seconds))
    return {"outcomes": outcomes, "error": None}


# ------------------------------------------------------------------------------------------- check


class ReportCollector:
    """A pytest plugin recording each test function's outcome (failed if any phase failed)."""

    def __init__(self):
        self.results = {}
        self.collection_errors = []

    def pytest_runtest_logreport(self, report):
        name = report.nodeid.split("::")[-1]
        previous = self.results.get(name)
        if report.failed:
            self.results[name] = "failed"
        elif report.skipped and previous != "failed":
            self.results[name] = "skipped"
        elif report.when == "call" and report.passed and previous is None:
            self.results[name] = "passed"

    def pytest_collectreport(self, report):
        if report.failed:
            self.collection_errors.append(str(report.longrepr)[-MAX_TEXT:])


def check(spec):
    import pytest

    path = os.path.join(os.getcwd(), spec["test_path"])
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(spec["source"])
    collector = ReportCollector()
    code = int(pytest.main([spec["test_path"], "-q", "-p", "no:cacheprovider"], plugins=[collector]))
    return {"exit_code": code, "results": collector.results, "collection_errors": collector.collection_errors, "error": None}


# -------------------------------------------------------------------------------------------- main

MODES = {"harvest": harvest, "replay": replay, "check": check}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=sorted(MODES))
    parser.add_argument("--spec", required=True)
    parser.add_argument("--out", required=True)
    ns = parser.parse_args(argv)
    with open(ns.spec, encoding="utf-8") as fh:
        spec = json.load(fh)
    try:
        result = MODES[ns.mode](spec)
    except BaseException as exc:  # the host reads the reason from OUT.json instead of a traceback
        result = {"error": "%s: %s" % (type_name(exc), safe_str(exc)), "trace": traceback.format_exc()[-MAX_TEXT:]}
    with open(ns.out, "w", encoding="utf-8") as fh:
        # Not sort_keys: a dataclass's or named tuple's fields keep their declared order (a named tuple
        # compares by position). Every dict here is built in a deterministic order instead.
        json.dump(result, fh)
    return 0


if __name__ == "__main__":
    sys.exit(main())

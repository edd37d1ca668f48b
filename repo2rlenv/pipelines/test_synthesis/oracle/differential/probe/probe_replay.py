"""``probe.py replay``: re-create recorded calls, run them, and write down everything a test could assert.

Part of the probe (see ``probe.py``): standalone, stdlib only, Python >= 3.8 syntax.

Each call runs under a per-call time limit. Its outcome is the return value or the exception, plus the
state visible through public attributes and protocols afterwards, as *facets* a test can assert one by one:

    return                       the value returned (an iterator consumed into a list, at most MAX_ITEMS)
    raise.type, raise.message    the exception
    self.<aspect>                the receiver of a method, after the call
    result.<aspect>              a returned instance of the package's own classes (not comparable by value)
    arg:<key>[.<aspect>]         a mutable argument (by value), an iterator argument (what is left of it),
                                 or an instance argument (its aspects)
    then:<i>[.list|.raise]       what the i-th recorded call made on the receiver afterwards returned (an
                                 iterator consumed into a list) or raised (the exception type)

with aspects ``attr:<name>`` (public attribute or property; for a mapping whose values cannot be written,
also ``attr:<name>.keys``, its keys in order, or ``attr:<name>.len`` when its keys are object identities), ``len``, ``list`` (iteration, for iterables
that are not iterators), ``dict`` (mappings), and for iterators ``rest`` (all that is left) or ``head``
(the first MAX_ITEMS items of an iterator that did not end). Aspects are read in that order, iterators
last, since reading them consumes them.
"""

from __future__ import annotations

import asyncio
import collections.abc
import inspect
import random
import signal
import time

from probe_target import describe_target
from probe_names import resolve, resolve_class, type_name
from probe_values import MAX_ITEMS, decode, encode_output, is_iterator, opaque, remaining, reset_identities, safe_str, take

MUTABLE_TAGS = ("list", "dict", "set", "dataclass")
# Every call starts from this seed of the `random` module, so a function that draws random numbers gives the
# same result on each run; a call that drew any is marked `seeded`, and its test seeds the same way.
RANDOM_SEED = 0


class CallTimeout(BaseException):
    """Raised by the alarm inside a call that ran past its time limit (BaseException: not swallowed)."""


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


# ------------------------------------------------------------------------------------------ observing


def public_names(obj):
    """Public instance attributes (``__dict__``, slots) and public properties of the class, sorted."""
    names = set(getattr(obj, "__dict__", {}) or {})
    for klass in type(obj).__mro__:
        slots = klass.__dict__.get("__slots__", ())
        names.update([slots] if isinstance(slots, str) else slots)
        names.update(k for k, v in vars(klass).items() if isinstance(v, property))
    return sorted(n for n in names if not n.startswith("_"))


def _read(aspects, key, getter):
    try:
        aspects[key] = getter()
    except CallTimeout:
        raise
    except Exception:
        pass  # an aspect that cannot be read is not asserted


def observe(obj, prefix):
    """The facets of ``obj`` (see the module docstring), keys starting with ``prefix``."""
    facets = {}
    for name in public_names(obj):
        key = "%sattr:%s" % (prefix, name)
        _read(facets, key, lambda n=name: encode_output(getattr(obj, n)))
        if key in facets and _has_opaque(facets[key]):
            _read_mapping(facets, key, lambda n=name: getattr(obj, n))
    cls = type(obj)
    iterator = is_iterator(obj)
    if hasattr(cls, "__len__"):
        _read(facets, prefix + "len", lambda: encode_output(len(obj)))
    if not iterator and hasattr(cls, "__iter__"):
        def listed():
            items, more = take(iter(obj), MAX_ITEMS)
            return encode_output(items) if not more else opaque(items)
        _read(facets, prefix + "list", listed)
    if isinstance(obj, collections.abc.Mapping) and len(obj) <= MAX_ITEMS:
        _read(facets, prefix + "dict", lambda: encode_output(dict(obj)))
    if iterator:
        def consumed():
            items, more = take(obj, MAX_ITEMS)
            return ("head" if more else "rest"), encode_output(items)
        box = {}
        _read(box, "x", consumed)
        if "x" in box:
            facets[prefix + box["x"][0]] = box["x"][1]
    return facets


def _has_opaque(spec):
    """Whether a value spec holds a part that cannot be written (an opaque value, an object identity)."""
    if spec.get("t") == "opaque":
        return True
    parts = list(spec.get("items") or []) + [x for pair in spec.get("pairs") or [] for x in pair]
    parts += list((spec.get("fields") or {}).values())
    return any(_has_opaque(p) for p in parts)


def _read_mapping(facets, key, getter):
    """What a test can write of a mapping attribute whose values it cannot (``machine.states``, name ->
    State): its keys in order (``<key>.keys``, read as ``list(machine.states)``), or, when the keys are
    object identities too (``model_graphs``, keyed by ``id(model)``), its size (``<key>.len``)."""
    def keys():
        value = getter()
        if not isinstance(value, collections.abc.Mapping) or len(value) > MAX_ITEMS:
            raise TypeError("not a small mapping")
        return value
    box = {}
    _read(box, "m", keys)
    if "m" not in box:
        return
    spec = encode_output(list(box["m"]))
    if not _has_opaque(spec):
        facets[key + ".keys"] = spec
    else:
        facets[key + ".len"] = encode_output(len(box["m"]))


def _is_package_instance(obj, package):
    return str(getattr(type(obj), "__module__", "")).split(".")[0] == package and not isinstance(obj, type)


# ------------------------------------------------------------------------------------------- calling


class Targets:
    """The replayed functions (the target, or the public entries reaching it), described once each."""

    def __init__(self, module, qualname):
        self.default = "%s:%s" % (module, qualname)
        self.known = {}

    def get(self, entry):
        key = entry or self.default
        if key not in self.known:
            module, qualname = key.split(":", 1)
            info, _func = describe_target(module, qualname)
            owner = resolve_class(module, info["owner"]) if info["owner"] else None
            name = qualname.rsplit(".", 1)[-1]
            public = getattr(owner, name) if owner is not None and info["kind"] != "constructor" else resolve(module, qualname)
            self.known[key] = (info, owner, public, name, module.split(".")[0])
        return self.known[key]


def build_receiver(spec):
    """The receiver and its constructor arguments by key (``arg:i``, ``kw:name``): steps may act on those."""
    if spec is None:
        return None, {}
    if spec["t"] != "object":
        return decode(spec), {}
    args = [decode(x) for x in spec["args"]]
    kw = {k: decode(v) for k, v in spec["kw"].items()}
    handles = {"arg:%d" % i: a for i, a in enumerate(args)}
    handles.update({"kw:%s" % k: v for k, v in kw.items()})
    return resolve(spec["module"], spec["qualname"])(*args, **kw), handles


def rebuild_inputs(call):
    """The receiver (or None) with its argument handles, positional and keyword arguments of one call spec."""
    receiver, handles = build_receiver(call.get("receiver"))
    args = [decode(x) for x in call["args"]]
    kwargs = {k: decode(v) for k, v in call["kwargs"].items()}
    return receiver, handles, args, kwargs


def _step_call(receiver, handles, step):
    obj = handles[step["on"]] if step.get("on") else receiver
    method = getattr(obj, step["name"])
    args = [decode(x) for x in step["args"]]
    kwargs = {k: decode(v) for k, v in step["kwargs"].items()}
    return lambda: method(*args, **kwargs)


def run_steps(receiver, handles, steps):
    """Drive the receiver through its recorded method calls; the exception type each step raised (or None)."""
    raised = []
    for step in steps or []:
        call = _step_call(receiver, handles, step)
        seen = None
        for _ in range(int(step.get("repeat", 1))):
            try:
                call()
            except Exception as exc:
                seen = seen or _exc_name(exc)
        raised.append(seen)
    return raised


def run_then(receiver, handles, steps):
    """Make the calls recorded after the replayed one; facets of what each returned or raised."""
    facets = {}
    for i, step in enumerate(steps or []):
        call = _step_call(receiver, handles, step)
        for _ in range(int(step.get("repeat", 1))):
            try:
                result = call()
                if is_iterator(result):
                    items, more = take(result, MAX_ITEMS)
                    key, value = ("then:%d.list" % i), (encode_output(items) if not more else opaque(items))
                else:
                    key, value = "then:%d" % i, encode_output(result)
            except CallTimeout:
                raise
            except Exception as exc:
                key, value = "then:%d.raise" % i, {"t": "str", "v": _exc_name(exc)}
        facets[key] = value  # the last of a run of the same call
    return facets


def _exc_name(exc):
    cls = type(exc)
    return "%s:%s" % (cls.__module__, cls.__qualname__)


def _invoke(kind, name, owner, public, receiver, args, kwargs):
    if kind == "property":
        return getattr(receiver, name)
    if kind == "method":
        return getattr(receiver, name)(*args, **kwargs)
    if kind in ("classmethod", "staticmethod"):
        return getattr(owner, name)(*args, **kwargs)
    if kind == "constructor":
        return owner(*args, **kwargs)
    return public(*args, **kwargs)


def _materialized(result, outcome):
    """The result with iterators consumed: a top-level iterator into a list (or its head), and iterators
    directly inside a returned tuple or list each into a list (then the outcome is `materialized`)."""
    if inspect.iscoroutine(result):
        outcome["awaited"] = True
        return asyncio.run(result)
    if is_iterator(result):
        outcome["listed"] = True  # set first: an exception while consuming is raised by `list(...)` in a test
        items, more = take(result, MAX_ITEMS)
        if more:
            outcome["prefix"] = MAX_ITEMS
        return items
    if type(result) in (tuple, list) and any(is_iterator(x) for x in result) and len(result) <= MAX_ITEMS:
        parts = []
        for part in result:
            items, more = take(iter(part), MAX_ITEMS)
            if more:
                return result  # written as opaque: a bounded list of an unbounded part says little
            parts.append(items)
        outcome["materialized"] = True
        return parts
    return result


def run_call(targets, call, seconds):
    reset_identities()  # objects are numbered by first appearance in each call's outputs
    random.seed(RANDOM_SEED)
    fresh = random.getstate()
    outcome = _run_call(targets, call, seconds)
    if random.getstate() != fresh:
        outcome["seeded"] = True
    return outcome


def _run_call(targets, call, seconds):
    info, owner, public, name, package = targets.get(call.get("entry"))
    kind = info["kind"]
    try:
        with Alarm(seconds):
            receiver, handles, args, kwargs = rebuild_inputs(call)
            step_raises = run_steps(receiver, handles, call.get("steps"))
    except CallTimeout:
        return {"kind": "timeout"}
    except BaseException as exc:
        return {"kind": "error", "message": "%s: %s" % (type_name(exc), safe_str(exc))}
    outcome = {"kind": "return"}
    if any(step_raises):
        outcome["step_raises"] = step_raises
    state = {}
    try:
        with Alarm(seconds):
            result = _invoke(kind, name, owner, public, receiver, args, kwargs)
            shown = _materialized(result, outcome)
            outcome["value"] = encode_output(shown)
            if outcome["value"]["t"] == "opaque" and (kind == "constructor" or _is_package_instance(shown, package)):
                state.update(observe(shown, "result."))
    except CallTimeout:
        return {"kind": "timeout"}
    except BaseException as exc:
        cls = type(exc)
        outcome = {
            "kind": "raise",
            "exc_module": cls.__module__,
            "exc_qualname": cls.__qualname__,
            "exc_importable": cls.__module__ == "builtins" or _reachable(cls),
            "message": safe_str(exc),
            "listed": bool(outcome.get("listed")),
        }
        if any(step_raises):
            outcome["step_raises"] = step_raises
    try:
        with Alarm(seconds):
            state.update(run_then(receiver, handles, call.get("then")))
            state.update(_after(kind, receiver, call, args, kwargs, package))
    except CallTimeout:
        pass
    if state:
        outcome["state"] = state
    return outcome


def _reachable(cls):
    try:
        return resolve(cls.__module__, cls.__qualname__) is cls
    except Exception:
        return False


def _after(kind, receiver, call, args, kwargs, package):
    """Facets of the receiver and of the arguments after the call (iterators last: reading consumes them)."""
    state = {}
    if receiver is not None and kind == "method":
        state.update(observe(receiver, "self."))
    inputs = [(str(i), spec, args[i]) for i, spec in enumerate(call["args"])]
    inputs += [(key, spec, kwargs[key]) for key, spec in call["kwargs"].items()]
    for key, spec, value in inputs:
        if spec["t"] in MUTABLE_TAGS:
            state["arg:" + key] = encode_output(value)
        elif spec["t"] == "iter":
            left = remaining(value)
            if left is not None:
                state["arg:" + key] = left
        elif spec["t"] == "object" and _is_package_instance(value, package):
            state.update(observe(value, "arg:%s." % key))
    return state


def replay(spec):
    targets = Targets(spec["module"], spec["qualname"])
    seconds = float(spec.get("call_timeout", 2.0))
    deadline = time.monotonic() + float(spec.get("total_timeout", 300.0))
    outcomes = []
    for call in spec["calls"]:
        if time.monotonic() > deadline:
            outcomes.append({"kind": "skipped"})
            continue
        try:
            outcomes.append(run_call(targets, call, seconds))
        except Exception as exc:  # an entry that cannot be described: this call never ran
            outcomes.append({"kind": "error", "message": "%s: %s" % (type_name(exc), safe_str(exc))})
    return {"outcomes": outcomes, "error": None}

"""``probe.py harvest``: record the real calls of a function while its covering tests run.

Part of the probe (see ``probe.py``): standalone, stdlib only, Python >= 3.8 syntax.

A trace function (``sys.settrace``: unlike a profile hook it is not called for every C function too, and
frames it does not ask for cost nothing more) watches each test's setup, call and teardown, and records
- calls of the *entries*: the target itself when a test may call it (a public name), else the public
  functions and methods that reach it (``probe_target.entry_names``);
- constructor calls of the package's classes (and of the test suite's helper classes), so an instance can
  be re-created by calling its class; an instance built inside another one's constructor and given that
  half-built object (a model whose ``__init__`` makes its own machine: ``self.machine = Machine(self)``)
  is instead re-created as the public attribute of its owner that holds it (``Stuff(...).machine``):
  calling its class again would build a second one on the owner;
- an instance a test builds by applying an operator or a public method to a re-creatable object
  (``"x" / Int8ub``, ``Query().f == 1``, ``Int8ub[3]``, ``d.compile()``) as that operation, the way the
  test wrote it (an operator even when its constructor call could be written: the operator may set state
  after construction); the package's module-level objects (``Int8ub``, a ``@singleton`` instance) by name;
- for each such instance, the method calls made on it from outside its own methods, in order (its
  *history*). A call on an instance that was passed to another one's constructor (a timer given to a
  cache) is part of that other one's history too, marked with the constructor argument it went through.
A recorded method call carries the receiver's history up to the call (``steps``, to bring a re-created
instance into the same state) and a few of the calls made on it afterwards (``then``: a change that does
not show at once often shows in what the instance does next). Arguments are written as value specs at
call time, before the call can change them; a fresh generator given to such a call (``insert_many(x for x
in ...)`` in a fixture) is written as ``iter([...])`` of the items the call drew from it, captured as the
generator yields them (a generator the call did not exhaust cannot be written: the history ends there).
"""

from __future__ import annotations

import inspect
import os
import sys
import threading
import time
import weakref

from probe_target import TargetError, Unbound, bind_frame, defaults_of, describe_target, entry_names
from probe_names import NamedObjects, SourceFiles, canonical, importable_helper, is_test_module, type_name
from probe_values import OPERATORS, Encoder

MAX_CALLS = 200
# Calls recorded per entry and test: spreads the recorded calls over the tests (a test that calls the
# function ten thousand times is one way of calling it), and lets the profiler stop early in such a test.
MAX_PER_TEST = 40
# Calls looked at per entry and test, recorded or not: writing down arguments is the expensive part, and a
# test calling the function half a million times with the same unwritable argument type gives no more.
MAX_TRIES_PER_TEST = 200
MAX_STEPS = 60  # method calls remembered per instance (runs of the same call count once)
MAX_THEN = 8  # calls after a recorded method call that are replayed (and may be asserted)
MAX_STACK = 64  # frames looked through for the running constructor of an instance's owner
CO_GENERATOR_LIKE = 0x20 | 0x80 | 0x200  # generator, coroutine, async generator
# Calls that only read an instance: left out of its history (they would be noise in a generated test).
QUERIES = frozenset({"__len__", "__repr__", "__str__", "__hash__", "__eq__", "__ne__", "__bool__", "__format__"})


def first_resume(code):
    """Offset of the instruction a generator's first entry stops at (later entries are resumptions)."""
    import dis

    for ins in dis.get_instructions(code):
        if ins.opname == "RESUME":
            return ins.offset
    return 0


class Entry:
    """One function whose calls are recorded, and the code object that runs it."""

    def __init__(self, module, qualname):
        self.module = module
        self.qualname = qualname
        self.info, self.func = describe_target(module, qualname)
        self.code = getattr(inspect.unwrap(self.func), "__code__", None)
        self.defaults = defaults_of(self.func)
        self.calls = {}

    def matches(self, code):
        if code is self.code:
            return True
        # The same function from a second import of its module (a test that reloads it).
        own = self.code
        return (
            own is not None and code.co_name == own.co_name and code.co_firstlineno == own.co_firstlineno
            and os.path.realpath(code.co_filename) == os.path.realpath(own.co_filename)
        )

    def report(self):
        calls = []
        for record in self.calls.values():
            history, start = record.pop("_then", (None, 0))
            record["call"]["then"] = [dict(s) for s in (history or [])[start:start + MAX_THEN]]
            calls.append(record)
        return {"module": self.module, "qualname": self.qualname, "target": self.info, "calls": calls}


class Role:
    """What a code object is to the harvester (computed once per code object)."""

    __slots__ = ("entry", "init", "method", "in_package")

    def __init__(self, entry=None, init=False, method=False, in_package=False):
        self.entry, self.init, self.method, self.in_package = entry, init, method, in_package


class Harvester:
    """The profile hook."""

    def __init__(self, spec):
        self.module = spec["module"]
        self.qualname = spec["qualname"]
        self.package = self.module.split(".")[0]
        self.root = os.path.realpath(os.getcwd()) + os.sep  # the repo: its code, tests included
        self.max_calls = int(spec.get("max_calls", MAX_CALLS))
        self.max_per_test = int(spec.get("max_per_test", MAX_PER_TEST))
        self.in_test = {}  # entry index -> calls recorded in the current test
        self.tries = {}  # entry index -> calls looked at in the current test
        self.constructors = {}  # id(instance) -> (weakref, constructor spec)
        self.histories = {}  # id(instance) -> [step] (None once it cannot be written down)
        self.owners = {}  # id(instance) -> [(id(owner), "arg:i" | "kw:name")]: constructors it was passed to
        # id(instance) -> (weakref, owner weakref, owner's __init__ code, id of its frame): an instance built
        # inside its owner's constructor and given the half-built owner (re-created as the owner's attribute).
        self.built_by = {}
        # id(instance) -> (its class, what its constructor was given that cannot be written as test code):
        # named in the skip of a receiver that then cannot be re-created ("a closure", "MagicMock").
        self.unwritable = {}
        self.frame = None  # the frame whose call is being recorded
        self.pending = {}  # id(frame) -> (id(instance), step), until the frame returns
        self.drawn = {}  # id(generator frame) -> [item spec or None]: what a recorded step's generator yielded
        self.stopped = False  # tracing was turned off within the current test (captures are then incomplete)
        self.codes = {}
        self.resume_offsets = {}
        self.entries = None
        self.package_dirs = ()
        self.error = None
        self.skipped = {}
        # id(frame) -> (method name, receiver spec, args, kwargs, serial): a test's operator or public method
        # call on a re-creatable object, until it returns (a new instance it returns is written as that call).
        self.operations = {}
        self.serial = 0  # constructors started so far in this test
        self.born = {}  # id(instance) -> the serial its constructor started at (in this test)
        self.encoder = Encoder(self.constructors, allow_import=False, sources=SourceFiles(), derive=self.derive,
                               named=NamedObjects(self.package).name_of)

    # -- set-up, once the tests have imported the package ---------------------------------------------

    def start(self):
        """Find the entries; an error is kept (the hook then records nothing) and reported after the tests."""
        if self.entries is not None:
            return
        self.entries = []
        try:
            for module, qualname in entry_names(self.module, self.qualname):
                try:
                    self.entries.append(Entry(module, qualname))
                except (TargetError, LookupError, AttributeError):
                    continue
        except Exception as exc:
            self.error = exc
        paths = getattr(sys.modules.get(self.package), "__path__", None) or []
        self.package_dirs = tuple(os.path.realpath(p) + os.sep for p in paths)

    def new_test(self):
        self.in_test = {}
        self.tries = {}
        self.pending.clear()
        self.drawn.clear()
        self.operations.clear()
        self.born.clear()
        self.stopped = False

    def _full(self, index):
        return (
            len(self.entries[index].calls) >= self.max_calls
            or self.in_test.get(index, 0) >= self.max_per_test
            or self.tries.get(index, 0) >= MAX_TRIES_PER_TEST
        )

    def saturated(self):
        """Whether no entry can take another call in this test (then tracing stops until the next one)."""
        return all(self._full(i) for i in range(len(self.entries or [])))

    # -- classification -------------------------------------------------------------------------------

    def _role(self, code):
        role = self.codes.get(code)
        if role is None:
            path = os.path.realpath(code.co_filename)
            in_repo = path.startswith(self.root)
            entry = next((i for i, e in enumerate(self.entries) if e.matches(code)), None)
            is_method = in_repo and code.co_argcount > 0 and code.co_varnames[0] == "self"
            in_package = path.startswith(self.package_dirs) if self.package_dirs else False
            role = self.codes[code] = Role(entry, is_method and code.co_name == "__init__", is_method, in_package)
        return role

    def _resumed(self, frame, code):
        if not code.co_flags & CO_GENERATOR_LIKE:
            return False
        if code not in self.resume_offsets:
            self.resume_offsets[code] = first_resume(code)
        return frame.f_lasti > self.resume_offsets[code]

    def _skip(self, reason):
        self.skipped[reason] = self.skipped.get(reason, 0) + 1

    def _ours(self, cls):
        module = str(getattr(cls, "__module__", ""))
        return module.split(".")[0] == self.package or is_test_module(module)

    def _trackable(self, cls):
        return self._ours(cls) and importable_helper(cls, False)

    # -- the hook -------------------------------------------------------------------------------------

    def hook(self, frame, event, arg):
        """The global trace function: sees each new frame; traces on only the frames whose return matters."""
        try:
            if event == "call" and id(frame) in self.drawn:
                frame.f_trace_lines = False
                return self.drawing
            if event == "call":
                self._on_call(frame)
                if id(frame) in self.pending or id(frame) in self.operations:
                    frame.f_trace_lines = False  # only its return: no event per line
                    return self.local
        except Exception as exc:  # the tests must run on whatever the harvester trips over
            self._skip("harvester: %s" % type(exc).__name__)
        return None

    def local(self, frame, event, arg):
        if event == "return":
            try:
                self._on_operation_return(frame, arg)
                self._on_return(frame)
            except Exception as exc:
                self._skip("harvester: %s" % type(exc).__name__)
        return self.local

    def drawing(self, frame, event, arg):
        """The local trace of a captured generator: each ``return`` event is a yield (or, last, its end)."""
        if event == "return":
            items = self.drawn.get(id(frame))
            if items is not None:
                items.append(self.encoder.encode(arg))
        return self.drawing

    def _on_call(self, frame):
        code = frame.f_code
        role = self._role(code)
        if not (role.init or role.method or role.entry is not None):
            return
        if self._resumed(frame, code):
            return
        self.frame = frame
        try:
            if role.init:
                self._record_init(frame, code)
            elif role.method:
                self._record_step(frame, code)
                if role.in_package:
                    self._record_operation(frame, code)
            if role.entry is not None:
                self._record_entry(role.entry, frame, code)
        finally:
            self.frame = None

    def _on_return(self, frame):
        item = self.pending.pop(id(frame), None)
        if item is None:
            return
        key, step, generators = item
        for gen, spec, frame_key in generators:
            items = self.drawn.pop(frame_key, None)
            # Exhausted: its last return event was its end, not a yield. Otherwise its rest is unknown.
            if self.stopped or items is None or inspect.getgeneratorstate(gen) != inspect.GEN_CLOSED or None in items[:-1]:
                self.histories[key] = None
                return
            spec["items"] = items[:-1]
        self._append(key, step)
        for owner, via in self.owners.get(key, ()):
            self._append(owner, dict(step, on=via))

    def _append(self, key, step):
        history = self.histories.get(key)
        if history is None:
            return
        if history and canonical(dict(history[-1], repeat=1)) == canonical(step):
            history[-1]["repeat"] += 1
        elif len(history) >= MAX_STEPS:
            self.histories[key] = None
        else:
            history.append(step)

    # -- recording ------------------------------------------------------------------------------------

    def _record_init(self, frame, code):
        obj = frame.f_locals.get("self")
        cls = type(obj)
        key = id(obj)
        self.born[key] = self.serial  # (an id may be reused within a test: the latest constructor counts)
        self.serial += 1
        if obj is None or key in self.constructors:
            return
        # Only the class's own constructor: a base class's __init__ run through super() has other arguments.
        own = next((k.__dict__["__init__"] for k in cls.__mro__ if "__init__" in k.__dict__), None)
        if getattr(inspect.unwrap(own), "__code__", None) is not code or not self._trackable(cls):
            return
        if key in self.built_by and self.built_by[key][0]() is obj:
            return
        building = self._building_owner(frame, code)
        if building is not None:
            owner, owner_frame = building
            try:
                self.built_by[key] = (self._ref(obj, key), weakref.ref(owner), owner_frame.f_code, id(owner_frame))
            except TypeError:
                return  # an owner that cannot be weakly referenced: not re-created
            self.histories[key] = []
            return
        try:
            args, kwargs = bind_frame(code, frame.f_locals, defaults_of(own), True, self.encoder)
        except Unbound as exc:
            if len(self.unwritable) < 10000:
                self.unwritable[key] = (cls, exc.args[0] if exc.args else None)
            return
        spec = {"t": "object", "module": self.encoder.module_of(cls), "qualname": cls.__qualname__, "args": args, "kw": kwargs}
        self.constructors[key] = (self._ref(obj, key), spec)
        self.histories[key] = []
        self._link_arguments(key, code, frame.f_locals)

    def _ref(self, obj, key):
        def forget(_ref, k=key, harvester=self):
            harvester.constructors.pop(k, None)
            harvester.histories.pop(k, None)
            harvester.owners.pop(k, None)
            harvester.built_by.pop(k, None)

        try:
            return weakref.ref(obj, forget)
        except TypeError:
            return (lambda o: (lambda: o))(obj)  # not weak-referenceable: keep it alive so the id stays its own

    def _building_owner(self, frame, code):
        """(owner, its constructor's frame) when a tracked instance whose constructor is still running is
        given to this constructor (``Machine(self)`` inside ``Stuff.__init__``); else None."""
        names = code.co_varnames[1:code.co_argcount + code.co_kwonlyargcount]
        values = [frame.f_locals.get(name) for name in names]
        if code.co_flags & 0x04:  # *args
            values += list(frame.f_locals.get(code.co_varnames[code.co_argcount + code.co_kwonlyargcount], ()))
        tracked = [v for v in values if v is not None and id(v) in self.constructors]
        if not tracked:
            return None
        caller, depth = frame.f_back, 0
        while caller is not None and depth < MAX_STACK:
            if caller.f_code.co_name == "__init__" and caller.f_code.co_argcount:
                this = caller.f_locals.get(caller.f_code.co_varnames[0])
                if any(this is v for v in tracked):
                    return this, caller
            caller, depth = caller.f_back, depth + 1
        return None

    def _in_owner_init(self, key, frame):
        """Whether the constructor of the owner that built instance ``key`` is still running below ``frame``."""
        record = self.built_by.get(key)
        if record is None:
            return False
        _ref, _owner, code, frame_id = record
        depth = 0
        while frame is not None and depth < MAX_STACK:
            if frame.f_code is code and id(frame) == frame_id:
                return True
            frame, depth = frame.f_back, depth + 1
        return False

    def derive(self, obj):
        """For the encoder: (owner, attribute name) of an instance built by its owner, a reason it cannot be
        written that way, or None for any other object."""
        record = self.built_by.get(id(obj))
        if record is None or record[0]() is not obj:
            return None
        owner = record[1]()
        if owner is None:
            return "built by a lost owner"
        if self._in_owner_init(id(obj), self.frame):
            return "built by %s, still in its constructor" % type_name(owner)
        names = sorted(name for name, value in getattr(owner, "__dict__", {}).items() if value is obj)
        public = [name for name in names if name.isidentifier() and not name.startswith("_")]
        if not public:
            return "built by %s, no public attribute" % type_name(owner)
        return owner, public[0]

    def _link_arguments(self, key, code, f_locals):
        """Remember which tracked instances were passed to this constructor, and under which argument."""
        names = code.co_varnames[1:code.co_argcount + code.co_kwonlyargcount]
        spec = self.constructors[key][1]
        positional = len(spec["args"])
        for i, name in enumerate(names):
            value = f_locals.get(name)
            if id(value) not in self.constructors or value is None:
                continue
            via = "arg:%d" % i if i < positional else ("kw:%s" % name if name in spec["kw"] else None)
            if via is not None:
                self.owners.setdefault(id(value), []).append((key, via))

    def _record_step(self, frame, code):
        """A method call on a tracked instance from outside its own methods: one step of its history."""
        obj = frame.f_locals.get("self")
        key = id(obj)
        if self.histories.get(key) is None or code.co_name in QUERIES:
            return
        if self._in_owner_init(key, frame):
            return  # made by its owner's constructor, which the re-created owner runs again
        caller = frame.f_back
        if caller is not None and caller.f_code.co_argcount and caller.f_code.co_varnames[0] == "self":
            if caller.f_locals.get("self") is obj:
                return  # the instance calling itself: part of a step already recorded
        active = {item[0] for item in self.pending.values()}
        if active and (key in active or any(owner in active for owner, _via in self.owners.get(key, ()))):
            return  # made by a recorded call still running (a table writing to its storage): part of that step
        if isinstance(inspect.getattr_static(type(obj), code.co_name, None), property):
            return  # a property read (its getter runs with self): not a call a test makes
        if code.co_name.startswith("_") and not code.co_name.endswith("__"):
            if caller is None or not self._role(caller.f_code).in_package:
                self.histories[key] = None  # a test called a private method: the public API cannot do the same
            return  # the package's own machinery, part of a public call already recorded
        func = getattr(type(obj), code.co_name, None)
        func = getattr(func, "__func__", func)
        defaults = defaults_of(func) if getattr(inspect.unwrap(func), "__code__", None) is code else {}
        self.encoder.generators = []
        try:
            args, kwargs = bind_frame(code, frame.f_locals, defaults, True, self.encoder)
        except Unbound:
            self.histories[key] = None
            return
        finally:
            generators, self.encoder.generators = self.encoder.generators, None
        captured = [(gen, spec, id(gen.gi_frame)) for gen, spec in generators]
        for _gen, _spec, frame_key in captured:
            self.drawn[frame_key] = []
        self.pending[id(frame)] = (key, {"name": code.co_name, "args": args, "kwargs": kwargs, "repeat": 1}, captured)

    def _record_operation(self, frame, code):
        """A test applying an operator (``"x" / Int8ub``, ``Query().f == 1``, ``Int8ub[3]``) or calling a public
        method (``d.compile()``) on a re-creatable object: remembered until it returns, so that a new instance
        it returns can be written the way the test built it."""
        name = code.co_name
        if (name not in OPERATORS and name.startswith("_")) or code.co_flags & CO_GENERATOR_LIKE:
            return  # private, or a generator (its frame returns what it yields)
        caller = frame.f_back
        if caller is None or self._role(caller.f_code).in_package:
            return  # the package's own machinery: the test's call is further out
        obj = frame.f_locals.get("self")
        if self.histories.get(id(obj)):
            return  # a receiver whose state its history changed is not what a bare spec re-creates
        receiver = self.encoder.encode(obj)
        if receiver is None:
            return
        func = getattr(type(obj), name, None)
        defaults = defaults_of(func) if getattr(inspect.unwrap(func), "__code__", None) is code else {}
        try:
            args, kwargs = bind_frame(code, frame.f_locals, defaults, True, self.encoder)
        except Unbound:
            return
        self.operations[id(frame)] = (name, receiver, args, kwargs, self.serial)

    def _on_operation_return(self, frame, result):
        item = self.operations.pop(id(frame), None)
        if item is None or result is None or result is frame.f_locals.get("self"):
            return
        name, receiver, args, kwargs, serial = item
        key = id(result)
        if self.born.get(key, -1) < serial or not self._ours(type(result)):
            return  # not an instance this call made
        record = self.constructors.get(key)
        if name not in OPERATORS and record is not None and record[0]() is result:
            return  # a method's result its own constructor call re-creates (an operator's is written as the operator)
        spec = {"t": "op", "v": name, "items": [receiver] + args, "kw": kwargs,
                "module": self.encoder.module_of(type(result)), "qualname": type(result).__qualname__}
        self.constructors[key] = (self._ref(result, key), spec)
        self.histories[key] = []
        self.unwritable.pop(key, None)
        self.built_by.pop(key, None)

    def _record_entry(self, index, frame, code):
        entry = self.entries[index]
        if self._full(index):
            if self.saturated():
                self.stopped = True
                sys.settrace(None)  # the rest of this test adds nothing: let it run at full speed
            return
        self.tries[index] = self.tries.get(index, 0) + 1
        kind = entry.info["kind"]
        receiver, steps, then = None, [], None
        if kind in ("method", "property"):
            obj = frame.f_locals.get(code.co_varnames[0])
            receiver = self.encoder.encode(obj)
            if receiver is None:
                reason = "receiver %s" % (self.encoder.failed or type_name(obj))
                cls, given = self.unwritable.get(id(obj), (None, None))
                if cls is type(obj) and given:
                    reason += " (its constructor was given %s)" % given
                self._skip(reason)
                return
            history = self.histories.get(id(obj), [])
            if history is None:
                self._skip("receiver history")
                return
            steps = [dict(s) for s in history]
            # This call's own step (if it is one) is appended when it returns; what follows it comes after.
            then = (history, len(history) + (1 if id(frame) in self.pending else 0))
        skip_first = kind in ("method", "classmethod", "property", "constructor")
        try:
            args, kwargs = bind_frame(code, frame.f_locals, entry.defaults, skip_first, self.encoder)
        except Unbound as exc:
            self._skip(str(exc.args[0]))
            return
        call = {"receiver": receiver, "steps": steps, "args": args, "kwargs": kwargs}
        key = canonical(call)
        if key not in entry.calls:
            self.in_test[index] = self.in_test.get(index, 0) + 1
            n = code.co_argcount + code.co_kwonlyargcount
            types = {name: type_name(frame.f_locals[name]) for name in code.co_varnames[:n] if name in frame.f_locals}
            entry.calls[key] = {"call": call, "types": types}
            if then is not None:
                entry.calls[key]["_then"] = then


def harvest(spec):
    import pytest

    harvester = Harvester(spec)
    # Tests run under the tracer cost many times their plain time (lark's 1,078 parser tests covering one
    # function, 13 s plain, did not finish in 240 s): past this, the session stops after the running test
    # with the calls recorded so far, instead of the runner killing it with none.
    time_limit = float(spec.get("time_limit") or 0)
    clock = {"start": None, "cut": False}

    class Profiling:
        """Traces each test's setup, call and teardown only: pytest's own start-up is a million calls."""

        @pytest.hookimpl(hookwrapper=True)
        def pytest_runtest_protocol(self, item, nextitem):
            harvester.start()
            harvester.new_test()
            now = time.monotonic()
            clock["start"] = clock["start"] or now
            if time_limit and now - clock["start"] > time_limit:
                clock["cut"] = True
                item.session.shouldstop = "the harvest's time share is spent"
                yield  # untraced; the session ends after it
                return
            if all(len(e.calls) >= harvester.max_calls for e in harvester.entries):
                yield  # every entry has all the calls it may record (or there is none to record)
                return
            threading.settrace(harvester.hook)
            sys.settrace(harvester.hook)
            try:
                yield
            finally:
                sys.settrace(None)
                threading.settrace(None)

    exit_code = None
    if spec.get("tests"):
        argv = list(spec["tests"]) + ["-q", "-p", "no:cacheprovider"]
        exit_code = int(pytest.main(argv, plugins=[Profiling()]))
    harvester.start()
    if harvester.error is not None:
        raise harvester.error
    info, _func = describe_target(harvester.module, harvester.qualname)
    return {
        "target": info,
        "entries": [e.report() for e in harvester.entries],
        "skipped": harvester.skipped,
        "tests_exit_code": exit_code,
        "cut": clock["cut"],
        "error": None,
    }

"""The interpreter half of a test run's barrier: an audit hook, sealed modules, data-only readers, a
coverage recorder nothing else can reach, seeded entropy.

Installed by each run process before pytest starts (`verifier_zygote`). At the session's start, before
any test module is collected, `seal` imports the changed modules and deletes their files (source and
bytecode) from the run's private copy: from then on no route reads them, in Python or in C (an XML
parser's entities, a Tcl `source`, a loader subclass, a reload), because they are gone. The hook arms
the moment the submission's own module begins to execute; from then on, for the rest of the run and
whoever asks (the submission, a callback it registered, a thread it started, the library itself), it
refuses:

- the code objects of changed code: `__code__`, `gi_code`, `cr_code`, `ag_code`, `f_code` of a function,
  generator, coroutine or frame whose code comes from a changed file (an AttributeError, so that
  `getattr(f, "__code__", None)` and `hasattr` see "none"). The library readers that need a signature,
  a flag, a file name, a caller or a traceback summary of such code get them from `facts`, which reads
  the code object and returns plain data, never calling anything while it holds the code;
- making code that claims a changed file's name (`compile(..., "pkg/mod.py", ...)`: a forged coverage
  record, a frame that looks like the target's), building code objects (`code.__new__`, but for
  `types.coroutine`'s flag), `marshal` loads outside the import system and writing `.pyc` files (so no
  hand-made bytecode can ever run), `ctypes`, the garbage collector's object graph, other threads'
  frames, tracers and profilers (but the recorder's own), new audit hooks, sub-interpreters,
  starting processes (seccomp refuses those in the kernel too), loading `readline`;
- reading the changed files that could not be sealed (a module whose import failed at the session's
  start) other than by the import system importing them, and moving or linking them;
- when the kernel has no Landlock (`verifier_kernel`): writing outside the run's own dirs, reading /proc
  or /sys, and abstract unix sockets.

The hook's entry is C (`_r2e_kernel.audit_hook`, built into the base images): the event filter, the busy
mark and a hold on the garbage collector while any thread is inside, none of which another thread of the
test can undo; it calls the Python checks here (`verdict`). Without the extension, Python's own
`sys.addaudithook` runs the same checks with a busy mark in Python (docs/integrity.md says what that leaves).
The hook is unreachable from Python once installed (no module or object holds it; `gc` is refused) and
cannot be removed; everything it calls is bound when it is made. So is the coverage recorder, which
every run has alike (only A's record counts): its lines live in the hook, reach it only from the
interpreter's own line events (or, on Python 3.11, from frames whose code really is the target's), and
leave the run signed with a key only the hook and the verifier hold — a run can write anything into its
output dir but not a valid record.
`os.urandom`, `os.getrandom`, `SystemRandom`, unseeded `random.Random()` and tempfile's names draw from
fixed seeds, so a run's "randomness" is the same in every run.

Stdlib only; copied verbatim into every task.
"""

import _thread
import types
import os
import sys

# Audit events the hook looks at; everything else returns at once.
COVER_START, COVER_LINE, COVER_DUMP = "repo2rlenv.cover.start", "repo2rlenv.cover.line", "repo2rlenv.cover.dump"
FACTS, SEALED = "repo2rlenv.facts", "repo2rlenv.sealed"
_OWN_EVENTS = frozenset({COVER_START, COVER_LINE, COVER_DUMP, FACTS, SEALED})
_EVENTS = frozenset({
    "exec", "open", "os.link", "os.symlink", "os.rename", "marshal.loads", "marshal.load", "code.__new__",
    "object.__getattr__", "sys.settrace", "sys.setprofile", "sys.monitoring.register_callback",
    "gc.get_objects", "gc.get_referrers", "gc.get_referents", "cpython.PyInterpreterState_New", "import",
    "sys.addaudithook", "subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork",
    "os.forkpty", "socket.bind", "socket.connect", "sqlite3.enable_load_extension", "sqlite3.load_extension",
    "sqlite3.connect", "compile", "sys._current_frames", "sys._getframe", "object.__setattr__", *_OWN_EVENTS,
})
_EVENT_PREFIXES = ("ctypes.",)
# Each builtin type whose code attribute raises `object.__getattr__`, paired with that one attribute: the
# hook reads it through the type's own C getter, never `getattr` (a function has no `gi_code`: getattr
# would read the function's own __dict__, which holds whatever the test put there; red team round 9).
_CODE_GETTERS = tuple((kind, name, vars(kind)[name].__get__) for kind, name in (
    (types.FunctionType, "__code__"), (types.FrameType, "f_code"), (types.GeneratorType, "gi_code"),
    (types.CoroutineType, "cr_code"), (types.AsyncGeneratorType, "ag_code")) if name in vars(kind))
_CODE_ATTRS = frozenset(name for _, name, _ in _CODE_GETTERS)
_FUNCTION_STATE = frozenset({"__code__", "__defaults__", "__kwdefaults__"})
# Bytes from a .pyc file: the 16-byte header the import system checks, then the marshal data.
_PYC_HEADER = 16
# The kernel stamps an inode's change time from a clock that can lag the wall clock by a tick: a file the
# run touched right after arming must still count as the run's.
_CTIME_SLACK_NS = 50_000_000
_PROCESS_EVENTS = frozenset({"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork",
                             "os.forkpty"})
_TRACE_EVENTS = frozenset({"sys.settrace", "sys.setprofile"})
_NO_REIMPORT = ("readline",)
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_MAX_LOGGED = 50
# What `facts` returns, by index.
FILENAME, NAME, QUALNAME, FIRSTLINENO, ARGCOUNT, POSONLY, KWONLY, PARAMS, FLAGS, POSITION = range(10)
_VARARGS, _VARKEYWORDS = 0x04, 0x08


# A refused code attribute raises a plain AttributeError (getattr's default applies). Every refusal is of
# a builtin type: a class of this module's could be given an `__init__` of the test's, which the hook would
# run when it builds the refusal (red team round 9).
CodeRefused = AttributeError


def install(policy, refusal_fd=None):
    """Install the readers, the hook and the replacements for one run. `policy`: {"submission": path of
    the test file, "protected_names": basenames of the changed files and their bytecode,
    "protected_paths": their paths in this run's copy, "cover": {"target": file, "key": hex, "fd":
    covered file's fd} for the recorder (the key is taken out of the dict), "own_roots": the run's writable dirs, "landlock": the Landlock ABI the kernel
    barrier applied (0: none)}."""
    _seed_entropy()
    _install_readers(frozenset(policy["protected_names"]), frozenset(policy["protected_paths"]))
    # readline reads any file into its history, below the audit hook, and it is a single-phase module:
    # re-creating it would bring back any function replaced here. So it is not loaded at all (the zygote
    # blocks it before pytest's capture plugin would import it, and the hook refuses loading it).
    sys.modules["readline"] = None
    native = native_hook()
    made = private_scope()["_make_hook"](policy, refusal_fd, native)
    if native is not None:
        native.audit_hook(made, tuple(sorted(_EVENTS)), _EVENT_PREFIXES)
        # Every sys.settrace event is refused but those `_r2e_kernel` raises itself: any trace function set
        # through sys.settrace runs under CPython's trampoline, which hands 'line' events to each frame's
        # `f_trace`, where a test can move `f_lineno` (red team rounds 15 and 16: one of ours that replaced
        # itself with the recorder; a tracer of the test's let through by a rule on the calling frame).
        # `sys.settrace(None)` stays possible (doctest's runner switches tracing off and back to None):
        # `_r2e_kernel.settrace` does that itself and refuses anything else. Threads start the recorder
        # themselves (`_traced_bootstrap`).
        sys.settrace = native.settrace
    else:
        sys.addaudithook(made)


# The `_r2e_kernel` hook protocol this verifier speaks (HOOK_API in templates/r2e_kernel.c).
HOOK_API = 5


def native_hook():
    """`_r2e_kernel` when it carries the audit hook this verifier speaks to (the base images build it;
    kernel_ext for local interpreters), else None: the hook is then Python's own, with the residuals
    docs/integrity.md lists. An image built from another source has another HOOK_API."""
    try:
        import _r2e_kernel
    except ImportError:
        return None
    return _r2e_kernel if getattr(_r2e_kernel, "HOOK_API", None) == HOOK_API else None


# The functions that make the hook and the recorder, and what they call when they are made.
_PRIVATE_MAKERS = ("_make_hook", "_make_recorder", "_import_chains", "_nested_codes", "_line_graph", "_path_resolver",
                   "_frozen_data", "_hook_codes")


def private_scope():
    """This module's globals and a copy of the builtins, in a dict nothing else holds, with the makers of
    the hook and the recorder rebuilt on it: every name their functions look up when an event comes
    (`_EVENTS`, `PermissionError`, …) is read from here. The module itself stays in sys.modules (the
    zygote imports it by name), where a test can rebind its globals or the builtins: the hook would then
    skip every event, or build the test's own exception class inside the hook (red team, round 3)."""
    import builtins

    scope = dict(globals())
    scope["__builtins__"] = dict(vars(builtins))
    for name in _PRIVATE_MAKERS:
        made = scope[name]
        scope[name] = types.FunctionType(made.__code__, scope, made.__name__, made.__defaults__, made.__closure__)
    return scope


def facts(obj, positions=False):
    """Plain data about the code of an exact function, method, frame or traceback — a tuple indexed by
    FILENAME … POSITION (POSITION: the traceback's or frame's current instruction's, when asked) — or
    None for anything else. The hook reads the code: nothing of the caller's runs while it is held."""
    found = []
    sys.audit(FACTS, obj, positions is True, found)
    return tuple(found) if found else None


# --------------------------------------------------------------------------- sealing

def seal(modules, state_path=None, state=None, then=None):
    """Import the changed modules, then empty their files in this run's copy and delete their bytecode.
    `modules`: [[dotted name, file], …]. Emptied, not deleted: a package stays a package for pytest's
    module naming, and the file is a new one (never truncated: it may be a hard link to the stage). A
    module whose import fails is left alone (its file stays, guarded by the hook only) and taken out of
    sys.modules so that the tests import it as they would. Runs before the submission; `state` (the
    kernel barrier's, read after `then`: a callable run once the modules are imported) plus what was sealed
    goes to `state_path`."""
    import importlib
    import json
    import linecache

    sys.audit(COVER_START)
    sealed, failed, done = [], {}, []
    for name, path in modules:
        before = set(sys.modules)
        try:
            module = importlib.import_module(name)
        except BaseException as exc:  # SystemExit and KeyboardInterrupt raised by an import count too
            for added in set(sys.modules) - before:
                sys.modules.pop(added, None)
            failed[name] = f"{type(exc).__name__}: {exc}"[:300]
            continue
        if os.path.realpath(getattr(module, "__file__", None) or "") != os.path.realpath(path):
            failed[name] = f"imported from {getattr(module, '__file__', None)}, not {path}"
            continue
        for victim in [path, *_bytecode_of(path)]:
            try:
                os.unlink(victim)
            except FileNotFoundError:
                pass
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
        sealed.append(name)
        done.append(path)
    sys.audit(SEALED, tuple(done))
    for filename in [f for f in linecache.cache if os.path.basename(f) in {os.path.basename(p) for _, p in modules}]:
        linecache.cache.pop(filename, None)
    sys.dont_write_bytecode = True  # writing .pyc files is refused from here on: skip the attempts
    guard_signal_handlers()
    if then is not None:
        then()
    if state_path is not None:
        with open(state_path, "w", encoding="utf-8") as fh:
            json.dump(dict(state or {}, sealed=sealed, seal_failed=failed), fh)
    return sealed, failed


def _bytecode_of(path):
    folder, stem = os.path.join(os.path.dirname(path), "__pycache__"), os.path.basename(path)[:-3] + "."
    try:
        return [os.path.join(folder, n) for n in os.listdir(folder) if n.startswith(stem) and n.endswith(".pyc")]
    except OSError:
        return []


# --------------------------------------------------------------------------- the hook

def _import_chains():
    """Code objects of the import system's frames, innermost first, for what only it may do: read the
    source of a changed file that could not be sealed, load bytecode, compile under a changed file's name."""
    from importlib import _bootstrap as boot
    from importlib import _bootstrap_external as ext

    def code(fn):
        return getattr(fn, "__code__", None)

    return {
        "source": (code(ext.FileLoader.get_data), code(ext.SourceLoader.get_code),
                   code(ext._LoaderBasics.exec_module)),
        "bytecode": (code(ext._compile_bytecode), code(ext.SourceLoader.get_code),
                     code(ext._LoaderBasics.exec_module)),
        "sourceless": (code(ext._compile_bytecode), code(ext.SourcelessFileLoader.get_code),
                       code(ext._LoaderBasics.exec_module)),
        # a frozen stdlib module (3.13's importlib.util): its bytecode is the interpreter's own
        "frozen": (code(boot._call_with_frames_removed), code(boot.FrozenImporter.exec_module)),
        "compile": (code(boot._call_with_frames_removed), code(ext.SourceLoader.source_to_code),
                    code(ext.SourceLoader.get_code), code(ext._LoaderBasics.exec_module)),
    }


def _make_hook(policy, refusal_fd, native=None):
    """The hook for `sys.addaudithook`, or with `native` (`_r2e_kernel`, from `native_hook`) the
    `decide(event, args, frame)` its `audit_hook` calls (it keeps the busy mark and holds the collector
    itself, in C)."""
    # Everything the hook calls is bound here, now: a submission can rebind `os.fspath`, `posixpath`'s
    # helpers or builtins later, but not these names.
    import types

    getframe, get_ident, write, thread_count = sys._getframe, _thread.get_ident, os.write, _thread._count
    resolve = _path_resolver(os.getcwd, os.readlink)
    _getattr, _len, _any, _str_str, _bytes_join = getattr, len, any, str.__str__, b"".join
    _str, _bytes, _int, _type, _list, _tuple = str, bytes, int, type, list, tuple
    _memoryview, _id, _code = memoryview, id, types.CodeType
    _fn, _method, _frame, _tb = types.FunctionType, types.MethodType, types.FrameType, types.TracebackType
    submission = policy["submission"]
    names = frozenset(policy["protected_names"])
    paths = frozenset(policy["protected_paths"])
    own_roots = tuple(r.rstrip("/") + "/" for r in policy.get("own_roots", ()))
    no_landlock = not policy.get("landlock")
    abstract_ok = policy.get("landlock", 0) >= 6
    chains = _import_chains()
    compile_bytecode = chains["bytecode"][0]
    frame_argument = native.frame_argument if native is not None else None
    arm_native = native.arm if native is not None else None
    import _imp

    get_frozen_object = _imp.get_frozen_object  # the real one: a test may rebind the module's name later
    # What marshal may load once armed: the interpreter's own frozen modules' data (3.13 raises the event for
    # them), or the bytes of the .pyc file this thread last opened, as the hook reads them itself. Whoever
    # serves the bytes (a loader subclass, an instance attribute, a patched `_imp`), they must be a real
    # .pyc's, and no run can write one (red team round 3: the loader's type proved nothing).
    frozen_data = _frozen_data()
    last_pyc = {}  # thread ident → path of the .pyc it last opened for reading
    os_open, os_read, os_close, os_fstat = os.open, os.read, os.close, os.fstat
    # Non-blocking: a FIFO named .pyc would otherwise hold the hook until someone writes to it.
    read_only = os.O_RDONLY | os.O_NONBLOCK
    import stat as _stat_module
    import time as _time_module

    is_regular, time_ns = _stat_module.S_ISREG, _time_module.time_ns
    guarded_code = _guarded_handler.__code__
    coroutine_code, types_dict = _getattr(types.coroutine, "__code__", None), vars(types)
    coroutine_seen = {}  # thread ident → the code of the exact function types.coroutine last read
    held = []  # every code object coroutine_seen has held: none is ever freed inside the hook
    import threading

    bootstrap = _getattr(threading.Thread._bootstrap_inner, "__code__", None)
    # doctest's runner switches tracing off around the examples and back to what it was.
    doctest = sys.modules.get("doctest")
    switchers = tuple(c for c in (_getattr(getattr(getattr(doctest, "DocTestRunner", None), "run", None),
                                            "__code__", None),) if c is not None)
    # Files whose reading stays refused: the changed ones, less those sealed (gone, so a test may make a
    # file of that name of its own).
    unsealed = set(names)
    state = {"armed": False, "armed_ns": 0, "logged": 0}
    busy = set()
    # id → every code object of the hook, the recorder and the path resolver: their frames are never handed
    # out. Looked up by id (an int), never by the code object, whose hash reads its constants.
    hook_codes = {}
    import gc

    gc_enabled, gc_disable, gc_enable, gc_freeze, gc_unfreeze = gc.isenabled, gc.disable, gc.enable, gc.freeze, gc.unfreeze

    subclass = type.__subclasscheck__  # PyType_IsSubtype on real types: reads no attribute, runs nothing
    # Every object the checks take out of the test's world (a function's code, a frame's slot) is kept
    # until the event is decided and the hook has let go: another thread can rebind `fn.__code__` meanwhile,
    # and the checks' reference would then be the last one, whose release (a weakref callback, a finalizer)
    # would run the test's code inside the hook (red team round 12). Per thread: threads take turns inside.
    keeps = {}

    def taken(obj):
        keeps[get_ident()].append(obj)
        return obj

    def log(what):
        if refusal_fd is not None and state["logged"] < _MAX_LOGGED:
            state["logged"] += 1
            try:
                write(refusal_fd, (what.replace("\n", " ")[:300] + "\n").encode("utf-8", "replace"))
            except OSError:
                pass

    recorder = _make_recorder(policy.get("cover"), log, native)

    def refuse(what):
        log(what)
        raise PermissionError(f"repo2rlenv verifier: {what} is not allowed in a graded test run")

    def refuse_attribute(what):
        log(what)
        raise AttributeError(f"repo2rlenv verifier: {what} is not allowed in a graded test run")

    def text(value):
        """An exact str for a path argument, or None. Only exact types: the hook never runs a method of an
        object the submission chose (`isinstance` reads `__class__`, a comparison calls `__eq__`), since
        whatever it ran would run inside the hook."""
        if _type(value) is _str:
            return value
        if _type(value) is _bytes:
            return value.decode("utf-8", "surrogateescape")
        return None

    def base(path):
        return path[path.rfind("/") + 1:]

    def bytecode_name(path):
        name = base(path)
        return name.endswith(".pyc") or ".pyc." in name

    def chain(frame, codes):
        for expected in codes:
            if frame is None or expected is None or frame.f_code is not expected:
                return False
            frame = frame.f_back
        return True

    def imported(frame, *kinds):
        for kind in kinds:
            if chain(frame, chains[kind]):
                return True
        return False

    def one_of(obj, known):
        # Identity only: `obj in a_set` hashes it and `==` compares it, through its type's (or metaclass's)
        # methods, which would run the submission's code inside the hook (red team rounds 2 and 3).
        for each in known:
            if obj is each:
                return True
        return False

    def ours(code):
        return _id(code) in hook_codes

    def real_bytecode(data):
        """`data` (what marshal is asked to load) is a frozen module's, or the .pyc this thread opened last."""
        if _type(data) is _memoryview:
            data = _bytes(data)  # a view's buffer is C memory: copying it runs nothing
        elif _type(data) is not _bytes:
            return False
        if data in frozen_data:
            return True
        path = last_pyc.get(get_ident())
        if path is None:
            return False
        try:
            fd = os_open(path, read_only)
        except OSError:
            return False
        chunks = []
        try:
            # A file the run made or changed (its inode's change time is the kernel's, which no test can
            # set) is no pyc of the import system's, whatever its name: a run can create one as a symlink's
            # target, by mknod, sqlite or a hard link to a file it writes (red team round 4). The import
            # system's are older than the submission. A FIFO or device is none either.
            facts = os_fstat(fd)
            if not is_regular(facts.st_mode) or facts.st_ctime_ns >= state["armed_ns"] - _CTIME_SLACK_NS:
                return False
            while True:
                chunk = os_read(fd, 1 << 20)
                if not chunk:
                    break
                chunks.append(chunk)
        except OSError:
            return False
        finally:
            os_close(fd)
        return _bytes_join(chunks)[_PYC_HEADER:] == data

    def changed_name(filename):
        return filename in paths or base(filename) in names

    def protected_code(code):
        if _type(code) is not _code:
            return False
        filename = code.co_filename
        if _type(filename) is not _str:
            # A str subclass (compile and loaders keep one) would hash and compare through its own methods;
            # str.__str__ gives a plain copy without calling any of them (red team round 3). Its type's
            # own mro says it is one: `isinstance` would read a `__class__` of the test's.
            # Asked of the type itself, not read from it: an attribute of a class goes through its metaclass,
            # whose `__mro__` property would run inside the hook (red team round 12).
            if not subclass(_str, _type(filename)):
                return False
            filename = _str_str(filename)
        return changed_name(filename)

    def own(path):
        full = resolve(path)
        return full == "/dev/null" or _any((full + "/").startswith(root) for root in own_roots)

    def read_facts(obj, positions, out):
        """`facts`: only exact builtin types are touched while the code object is held."""
        kind, lasti = _type(obj), -1
        if kind is _method:
            obj = taken(obj.__func__)
            kind = _type(obj)
        if kind is _tb:
            lasti = obj.tb_lasti
            code = taken(obj.tb_frame.f_code)
        elif kind is _frame:
            lasti = obj.f_lasti
            code = obj.f_code
        elif kind is _fn:
            code = taken(obj.__code__)
        else:
            return
        flags = code.co_flags
        count = code.co_argcount + code.co_kwonlyargcount + ((flags & 0x04) >> 2) + ((flags & 0x08) >> 3)
        position = (None, None, None, None)
        if positions and lasti >= 0:
            skip = lasti // 2
            for found in code.co_positions():
                if not skip:
                    # The line only: a span's columns and height are facts of the text that the twins
                    # move too rarely for a pin to miss (a token gap widened in a few twins of four).
                    position = (found[0], None, None, None)
                    break
                skip -= 1
        out.extend((code.co_filename, code.co_name, code.co_qualname, code.co_firstlineno, code.co_argcount,
                    code.co_posonlyargcount, code.co_kwonlyargcount, code.co_varnames[:count], flags, position))

    def check_open(args, frame):
        if _type(args[0]) is _int:
            return
        path = text(args[0])
        if path is None:  # io.FileIO hands the hook the object it was given, not its path
            # No attribute of the object's type is read: a metaclass property would run inside the hook.
            refuse("opening a file named by an object that is not a str (pass a str)")
        flags = args[2] if _len(args) > 2 and _type(args[2]) is _int else 0
        mode = args[1] if _len(args) > 1 and _type(args[1]) is _str else ""
        writing = bool(flags & _WRITE_FLAGS) or _any(c in mode for c in "wax+")
        if base(path) in unsealed and not imported(frame, "source"):
            refuse(f"reading {base(path)} (a file the variants change)")
        if writing and bytecode_name(path):
            refuse(f"writing {base(path)} (bytecode)")
        if not writing and path.endswith(".pyc"):
            last_pyc[get_ident()] = path
        if no_landlock:
            full = resolve(path)
            if full in ("/proc", "/sys") or full.startswith(("/proc/", "/sys/")):
                refuse(f"opening {full}")
            if writing and not own(path):
                refuse(f"writing {full} (outside the run's own directories)")

    def check(event, args, frame):
        if event == "open":
            check_open(args, frame)
        elif event in ("os.link", "os.symlink", "os.rename"):
            source = text(args[0])
            if source is not None and base(source) in unsealed:
                refuse(f"{event} of {base(source)} (a file the variants change)")
            target = text(args[1]) if _len(args) > 1 else None
            if target is not None and bytecode_name(target):
                refuse(f"{event} to {base(target)} (bytecode)")
            if no_landlock and target is not None and not own(target):
                refuse(f"{event} outside the run's own directories")
        elif event == "marshal.loads":
            if not imported(frame, "bytecode", "sourceless", "frozen") or not _len(args) or not real_bytecode(args[0]):
                refuse("loading marshal data other than a .pyc file's or a frozen module's")
            # What was compared is a copy: marshal then reads the buffer it was handed, which a loader's
            # get_data (or a rebound `_imp.get_frozen_object`'s argument) may have made a bytearray that
            # another thread rewrites meanwhile (red team round 11). `_compile_bytecode` must hold bytes;
            # the frozen chain must be calling the real `_imp.get_frozen_object` (frozen data is C memory).
            if frame_argument is not None:
                given = taken(frame_argument(frame, 0))
                if frame.f_code is compile_bytecode:
                    if _type(given) is _memoryview:
                        given = taken(given.obj)
                    if _type(given) is not _bytes:
                        refuse("loading bytecode from a buffer that can change after it was checked (not bytes)")
                elif given is not get_frozen_object:
                    refuse("loading marshal data through the frozen chain other than by _imp.get_frozen_object")
        elif event == "marshal.load":
            refuse("loading marshal data from a file object")
        elif event == "object.__getattr__":
            name = args[1] if _len(args) > 1 and _type(args[1]) is _str else None
            if name == "__code__" and _type(args[0]) is _fn and frame is not None and frame.f_code is coroutine_code \
                    and frame.f_globals is types_dict:
                # Kept for good: replacing the entry must never drop a code object's last reference here,
                # where its weakref callbacks and its fields' finalizers would run (red team round 9).
                held.append(args[0].__code__)
                coroutine_seen[get_ident()] = held[-1]
            if name in _CODE_ATTRS:
                for kind, attribute, getter in _CODE_GETTERS:
                    if _type(args[0]) is kind:
                        if attribute == name and protected_code(taken(getter(args[0]))):
                            refuse_attribute(f"reading the code object of changed code ({name})")
                        break
            if name == "tb_frame" and _type(args[0]) is _tb and ours(args[0].tb_frame.f_code):
                refuse_attribute("reading a frame of the verifier's audit hook (tb_frame)")
        elif event == "object.__setattr__":
            # The guarded signal handlers keep what they call in their defaults: not the test's to swap.
            if _len(args) > 1 and _type(args[0]) is _fn and _type(args[1]) is _str \
                    and args[1] in _FUNCTION_STATE and taken(args[0].__code__) is guarded_code:
                refuse(f"rebinding {args[1]} of the run's signal handler")
        elif event == "sys._getframe":
            if _len(args) and _type(args[0]) is _frame and ours(args[0].f_code):
                refuse("reading a frame of the verifier's audit hook (sys._getframe)")
        elif event == "compile":
            filename = text(args[1]) if _len(args) > 1 else None  # compile has made a path object a str
            if filename is not None and changed_name(filename) and not imported(frame, "compile"):
                refuse(f"compiling code under the name of {base(filename)} (a file the variants change)")
        elif event in _TRACE_EVENTS:
            # With `_r2e_kernel`, its own sys.settrace events were let through in C: the rest is refused.
            # Without it (the Python fallback, whose residuals docs/integrity.md lists), sys.settrace's event
            # carries no argument: threading's bootstrap (installing the recorder in a thread) and doctest's
            # runner (putting back what was there) are let through by their code alone. Their globals can be
            # the test's, so a test can install a tracer this way. What was read here before (threading's
            # dict) ran the test's __eq__.
            if native is not None or not (event == "sys.settrace" and frame is not None and (
                    (frame.f_code is bootstrap and recorder is not None) or one_of(frame.f_code, switchers))):
                refuse(f"{event} (tracing or profiling)")
        elif event in _PROCESS_EVENTS:
            refuse(f"starting a process ({event})")
        elif event == "code.__new__":
            # types.coroutine only flips a flag of a real function's code (asyncio and others decorate at
            # import). Its code runs over whatever objects and globals it is handed, so a fake code's
            # `replace` built any bytecode (red team round 4): now it must run over the types module's own
            # globals, and the new bytecode must be that of the exact function whose `__code__` it read.
            seen = coroutine_seen.pop(get_ident(), None)
            if not (frame is not None and frame.f_code is coroutine_code and frame.f_globals is types_dict
                    and seen is not None and _len(args) and _type(args[0]) is _bytes and seen.co_code == args[0]):
                refuse("building a code object")
        elif event == "import":
            if _len(args) > 1 and text(args[1]) and _type(args[0]) is _str and args[0] in _NO_REIMPORT:
                refuse(f"loading the {args[0]} module")
        elif event in ("socket.bind", "socket.connect"):
            address = args[1] if _len(args) > 1 else None
            if not abstract_ok and (_type(address) is _str or _type(address) is _bytes) and address[:1] in ("\0", b"\0"):
                refuse("abstract unix sockets")
        elif event == "sqlite3.connect":
            database = text(args[0]) if args else None
            if database is not None and base(database) in unsealed:
                refuse(f"opening {base(database)} (a file the variants change)")
        else:  # gc scans, other threads' frames, sub-interpreters, audit hooks, callbacks, sqlite extensions
            refuse(event)

    def own_event(event, args, caller):
        if event == FACTS:
            if _len(args) == 3 and _type(args[2]) is _list:
                read_facts(args[0], args[1] is True, args[2])
        elif event == SEALED:
            if not state["armed"] and _len(args) == 1 and _type(args[0]) is _tuple:
                for path in args[0]:
                    if _type(path) is _str:
                        unsealed.discard(base(path))
                        for name in [n for n in unsealed if n.startswith(base(path)[:-3] + ".") and n.endswith(".pyc")]:
                            unsealed.discard(name)
                if recorder is not None:
                    recorder[5]()
        elif recorder is not None:
            if event == COVER_START and not state["armed"]:
                recorder[0]()
            elif event == COVER_LINE and _len(args) == 2 and _type(args[0]) is _frame and _type(args[1]) is _str:
                recorder[1](args[0], _str_str(args[1]), caller)
            elif event == COVER_DUMP:
                recorder[2]()

    def judge(event, args, frame):
        """Return, or raise the refusal. `frame`: the one that raised the event."""
        if event in _OWN_EVENTS:
            own_event(event, args, frame)
        elif not state["armed"]:
            if event == "exec" and recorder is not None:  # the target's own code, as its import made it
                recorder[4](args[0])
            if event == "exec" and _getattr(args[0], "co_filename", None) == submission:
                state["armed"] = True  # first: if the clock failed next, every .pyc would count as the run's
                if arm_native is not None:
                    arm_native()
                state["armed_ns"] = time_ns()
        elif event == "exec":
            pass
        elif event.startswith("ctypes."):
            refuse(f"ctypes ({event})")
        else:
            check(event, args, frame)

    def verdict(event, args, frame):
        """(None or the refusal the hook raises — a fresh exception of a builtin type, with no traceback —,
        the objects the checks took: released by the caller once the hook has let go). It never raises: the
        frames of its refusals stay inside it and are freed here, by reference count, so none of them — they
        hold the hook's state — can end up anywhere a test reaches (gc.garbage under DEBUG_SAVEALL, red team
        round 9)."""
        failure = None
        ident = get_ident()
        keeps[ident] = kept = []
        try:
            judge(event, args, frame)
        except BaseException as exc:  # noqa: BLE001 — every refusal, and any fault of the hook's, refuses
            message = exc.args[0] if _len(exc.args) and _type(exc.args[0]) is _str else (
                f"repo2rlenv verifier: {event} refused (the audit hook failed: {_type(exc).__name__})")
            failure = (AttributeError if _type(exc) is AttributeError else PermissionError, message)
        del keeps[ident]
        return None if failure is None else failure[0](failure[1]), kept

    def decide(event, args):
        """Python's own hook (no `_r2e_kernel`): the busy mark and the collector are handled here, with the
        two residuals docs/integrity.md lists (another thread lowering the recursion limit or switching the
        collector back on while this runs). The only frame a refusal carries out is `_hook`'s, which holds
        nothing."""
        if _type(event) is not _str:  # a str subclass (sys.audit takes one) would run its own __eq__ here
            event = _str_str(event)
        if event not in _EVENTS and not event.startswith(_EVENT_PREFIXES):
            return None
        ident = get_ident()
        if ident in busy:
            # The hook's own attribute reads and frame lookups, and the recorder's set-up. No code of the
            # submission runs while the hook does: it touches exact builtin types only, keeps every code
            # object it took (none is freed here), and the collector is off meanwhile with all that existed
            # before frozen (another thread may switch it back on: then only what is made during the
            # event can be collected, never the test's earlier garbage).
            return None
        busy.add(ident)
        collecting = gc_enabled()
        if collecting:
            gc_disable()
        # Only another thread can turn the collector back on while the hook runs (when it waits for the
        # GIL). Freezing costs: unfreezing hands the zygote's frozen heap back to the collector, which then
        # walks it (a third more CPU a run), so it is done only while a thread of the test's is alive.
        frozen = state["armed"] and thread_count() > 0
        if frozen:
            gc_freeze()
        try:
            refusal, kept = verdict(event, args, getframe(2))
            return refusal  # `kept` goes when this returns, after the busy mark
        finally:
            busy.discard(ident)
            if frozen:
                gc_unfreeze()
            if collecting:
                gc_enable()

    for code in _hook_codes():
        hook_codes[_id(code)] = code
    if native is not None:
        # _r2e_kernel's hook filters the names, passes an exact str and the raising frame, keeps the busy mark
        # in C and holds the collector meanwhile: no finalizer of the test's starts inside.
        return verdict
    # The hook itself: no globals, no builtins, no closure; what it calls it holds as a default, which it
    # deletes before it raises, so that its frame (the one a refusal's traceback holds) holds nothing.
    return types.FunctionType(_hook.__code__, {"__builtins__": {}}, "hook", (decide, PermissionError))


def _hook(event, args, _decide=None, _refused=None):
    """The audit hook: `_make_hook` gives this code its own function, with `decide` and PermissionError as
    its defaults, no globals and no builtins. Deleting them before raising leaves nothing in the one hook
    frame a refusal's traceback carries out; `decide` itself never raises. It is reached at the recursion
    limit too: then it refuses."""
    try:
        refusal = _decide(event, args)
    except:  # noqa: E722 — no builtins here to name BaseException; only a full stack: decide never raises
        refusal = _refused("repo2rlenv verifier: the audit hook could not run (the stack is full)")
    del _decide, _refused
    if refusal is not None:
        raise refusal


def _hook_codes():
    """Every code object whose frames are the hook's (the hook, its functions, the recorder's, the path
    resolver's): never handed out, and no signal handler runs above one."""
    return [_hook.__code__,
            *(c for maker in (_make_hook, _make_recorder, _path_resolver) for c in _nested_codes(maker.__code__))]


def _frozen_data():
    """The marshal data of the interpreter's frozen modules (3.11 hands none out, and loads them without the
    marshal event)."""
    import _imp

    found = set()
    for name in getattr(_imp, "_frozen_module_names", lambda: ())():
        try:
            spec = _imp.find_frozen(name, withdata=True)
        except (ImportError, TypeError):
            continue
        if spec is not None and spec[0] is not None:
            found.add(bytes(spec[0]))
    return frozenset(found)


def _path_resolver(getcwd, readlink):
    """`resolve(path)`: what os.path.realpath(os.path.join(os.getcwd(), path)) gives, made of the two
    calls handed in and methods of exact strs only. posixpath's functions look up their helpers
    (`_get_sep`, `_joinrealpath`, `os.fspath`) in module globals when they run, so a test that rebinds one
    would run inside the hook (red team, round 2)."""

    def resolve(path):
        if not path.startswith("/"):
            path = getcwd() + "/" + path
        done, todo, hops = [], path.split("/")[::-1], 0
        while todo:
            part = todo.pop()
            if part == "" or part == ".":
                continue
            if part == "..":
                if done:
                    done.pop()
                continue
            here = "/" + "/".join(done + [part])
            try:
                target = readlink(here)
            except (OSError, ValueError):  # not a link, not there (kept as written, as realpath does)
                done.append(part)
                continue
            hops += 1
            if hops > 40:  # a loop of links: the rest stays as written
                done.append(part)
                continue
            if target.startswith("/"):
                done = []
            todo.extend(target.split("/")[::-1])
        return "/" + "/".join(done)

    return resolve


def guard_signal_handlers():
    """Put every Python signal handler of the run (the case timeout's, the target's own) behind
    `_guarded_handler`. Called before new handlers are refused (`verifier_kernel.seal_signal_handlers`)."""
    import signal

    codes = frozenset(id(c) for c in _hook_codes())
    for signum in signal.valid_signals():
        try:
            handler = signal.getsignal(signum)
        except (OSError, ValueError):
            continue
        if callable(handler) and getattr(handler, "__code__", None) is not _guarded_handler.__code__:
            guarded = types.FunctionType(_guarded_handler.__code__, {"__builtins__": {}}, "guarded_handler",
                                         (handler, codes, signal.SIGALRM, signal.setitimer, signal.ITIMER_REAL,
                                          getattr, id))
            try:
                signal.signal(signum, guarded)
            except (OSError, ValueError, RuntimeError):
                continue


def _guarded_handler(signum, frame, _handler=None, _codes=frozenset(), _alarm=0, _setitimer=None, _real=0,
                     _getattr=None, _id=None):
    """A Python signal handler runs wherever the interpreter is when the signal lands, the audit hook
    included, and its frame argument (or any frame above it) would hand out the hook's frame and closure
    (red team round 3: the test fired the case timeout's alarm while the hook ran). So the handler runs
    only when no frame of the hook is on the stack; otherwise an alarm comes back 1 ms later and another
    signal is dropped. Everything it uses is a default (immutable, and the hook refuses rebinding
    `__defaults__` or `__code__`): it looks up no name at all."""
    here = frame
    while here is not None:
        if _id(_getattr(here, "f_code", None)) in _codes:
            if signum == _alarm:
                _setitimer(_real, 0.001)
            return None
        here = here.f_back
    return _handler(signum, frame)


def _nested_codes(code):
    """`code` and every code object defined inside it (its functions, their functions, …)."""
    found = [code]
    for const in code.co_consts:
        if type(const) is type(code):
            found.extend(_nested_codes(const))
    return found


# --------------------------------------------------------------------------- the coverage recorder

def _make_recorder(cover, log, native=None):
    """(start, record an event of a frame, dump, the 3.11 tracer once started, adopt, prepare) for the
    target file, or None. Only A records (a run can tell it is A anyway: it runs alone and first).

    A line counts only when the code that ran it is one of the target's own code objects: those its
    import compiled while the run was being set up (`adopt`, from the import's `exec` event, before the
    submission runs), never code made, loaded or re-filed later under the target's name. The lines are
    kept here, fed by the interpreter's line events — sys.monitoring's, whose callback nothing can fetch
    once the hook refuses `register_callback`, or on 3.11 `_r2e_kernel`'s C trace function (no Python
    code runs during its 'line' events, so no frame can be made to jump: r2e_kernel.c). Without
    `_r2e_kernel` (a local interpreter without a compiler), 3.11 falls back to a Python trace function that
    hands each event of a target frame to the hook; a test can reach it and a target frame (`f_trace`,
    `f_back`), so the record is made worthless when an event reaches the hook from anything but the
    interpreter calling the recorder, or when a frame goes from one line to a line that no control-flow
    edge of its code leads to (a jump of `f_lineno`) — which red team round 14 still got past (a class as
    `f_trace`): do not train on such gradings. Records are written as `lines<TAB>hmac`."""
    if not cover:
        return None
    import hashlib
    import threading
    import types

    target = cover["target"]
    targets = frozenset({target, os.path.realpath(target)})
    key = bytes.fromhex(cover.pop("key")).ljust(64, b"\0")
    fd = cover.get("fd")
    sha256, write, _sorted, _map, _str, _type, _id, _len = hashlib.sha256, os.write, sorted, map, str, type, id, len
    _code = types.CodeType
    inner, outer = bytes(b ^ 0x36 for b in key), bytes(b ^ 0x5C for b in key)
    del key
    lines = set()
    started, installed, tainted = [], [], []
    own = {}  # id → the target's own code objects (kept alive, so that no other object takes an id)
    graphs = {}  # id of own code → (offset → line, line → the lines that may come next), 3.11 only
    at = {}  # id of a live target frame → the line it was last at (3.11)
    callers = []  # the code of the recorder's own trace functions (3.11), compared by identity

    def sign(data):
        return sha256(outer + sha256(inner + data).digest()).hexdigest()

    def adopt(code):
        stack = [code]
        while stack:
            code = stack.pop()
            if _type(code) is not _code or _id(code) in own:
                continue
            if _type(code.co_filename) is _str and code.co_filename in targets:
                own[_id(code)] = code
            stack.extend(c for c in code.co_consts if _type(c) is _code)

    def start():
        if started:
            return
        started.append(True)
        monitoring = getattr(sys, "monitoring", None)
        if monitoring is not None:
            disable = monitoring.DISABLE

            def on_line(code, line):
                if _id(code) in own:
                    lines.add(line)
                return disable  # each location reports once: after that the recorder costs nothing there

            for tool in (monitoring.COVERAGE_ID, 5, 4, 3, 2, 1):
                try:
                    monitoring.use_tool_id(tool, "repo2rlenv")
                except ValueError:
                    continue
                monitoring.register_callback(tool, monitoring.events.LINE, on_line)
                monitoring.set_events(tool, monitoring.events.LINE)
                return
            return
        if native is not None:
            # 3.11 with `_r2e_kernel`: a C trace function, which nothing can call, wrap or outrun, and under
            # which no code of the test's runs during a 'line' event, so no frame can jump (r2e_kernel.c).
            native.record_lines(own, lines)
            threading.Thread._bootstrap_inner = _traced_bootstrap(threading.Thread._bootstrap_inner, native.trace_here)
            return
        audit = sys.audit

        def local(frame, event, arg):
            audit(COVER_LINE, frame, event)
            return local

        dict_get = dict.get  # the frame's globals may be a dict subclass with a get of its own

        def tracer(frame, event, arg):
            if dict_get(frame.f_globals, "__file__") in targets:
                audit(COVER_LINE, frame, event)
                return local
            return None

        callers.extend((local.__code__, tracer.__code__))
        installed.append(tracer)
        sys.settrace(tracer)
        threading.settrace(tracer)

    def prepare():
        """3.11: the line graph of every own code object, made now, before the submission runs (dis is
        the submission's to change later)."""
        if installed:
            for ident, code in own.items():
                graphs[ident] = _line_graph(code)

    def taint(why):
        if not tainted:
            tainted.append(why)
            log(f"coverage record made worthless: {why}")

    def record(frame, event, caller):
        code = caller.f_code if caller is not None else None
        if code is None or _len(callers) != 2 or not (code is callers[0] or code is callers[1]) \
                or caller.f_back is not frame:
            taint("a line event that the interpreter did not send to the recorder")
            return
        code = frame.f_code
        if _id(code) not in own:
            return
        ident = _id(frame)
        if event == "call":  # a new frame (f_lasti -1), or a generator resumed at its yield
            graph = graphs.get(_id(code))
            at[ident] = None if frame.f_lasti < 0 or graph is None else graph[0].get(frame.f_lasti)
        elif event == "return":
            at.pop(ident, None)
        elif event == "line":
            line = frame.f_lineno
            graph = graphs.get(_id(code))
            if graph is not None:
                allowed = graph[1].get(at.get(ident))
                if allowed is not None and line not in allowed:
                    taint(f"line {line} of {code.co_name} reached from line {at.get(ident)} by no edge of its code")
            at[ident] = line
            lines.add(line)

    def dump():
        if fd is None:
            return
        data = TAINTED if tainted else ",".join(_map(_str, _sorted(lines))).encode()
        try:
            write(fd, data + b"\t" + sign(data).encode() + b"\n")
        except OSError:
            pass

    def tracer_installed():
        return installed[0] if installed else None

    return start, record, dump, tracer_installed, adopt, prepare


def _traced_bootstrap(bootstrap_inner, trace_here):
    """threading's bootstrap of a new thread, which first starts the C line recorder in that thread (3.11):
    no trace function passes through `sys.settrace` (`threading.settrace` would). Outside the hook's makers,
    so its frame, at the top of every thread, is no frame of the hook's. A test may put the original back
    (its threads are then not recorded) or call this itself (it starts the recorder, nothing else)."""

    def _bootstrap_inner(self):
        trace_here()
        return bootstrap_inner(self)

    return _bootstrap_inner


# Instructions after which execution never goes on to the next one.
_NO_FALLTHROUGH = frozenset({"RETURN_VALUE", "RETURN_CONST", "RAISE_VARARGS", "RERAISE", "JUMP_FORWARD",
                             "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT", "JUMP", "JUMP_NO_INTERRUPT"})


def _line_graph(code):
    """({offset: line}, {line: the lines a line event may report next}) of one code object (nested ones
    have their own). An edge is a jump, a fall-through or an exception handler; a line's successors are
    the lines of the instructions it reaches through its own and line-less instructions (the interpreter
    reports a line event when the line changes, or on a backward jump). Key None: the first line."""
    import dis

    ins = list(dis.get_instructions(code))
    offsets = [i.offset for i in ins]
    line = {i.offset: (i.positions.lineno if i.positions is not None else None) for i in ins}
    jumps = frozenset(dis.hasjrel) | frozenset(dis.hasjabs)
    parse = getattr(dis, "_parse_exception_table", None)
    handlers = [(e.start, e.end, e.target) for e in parse(code)] if parse is not None else []
    succ = {}
    for k, i in enumerate(ins):
        out = [i.argval] if i.opcode in jumps and isinstance(i.argval, int) else []
        if i.opname not in _NO_FALLTHROUGH and k + 1 < len(ins):
            out.append(offsets[k + 1])
        out += [t for s, e, t in handlers if s <= i.offset < e]
        succ[i.offset] = out
    graph = {}
    for number in {n for n in line.values() if n is not None}:
        seen, todo, nxt = set(), [o for o in offsets if line[o] == number], {number}
        while todo:
            o = todo.pop()
            if o in seen:
                continue
            seen.add(o)
            for t in succ.get(o, ()):
                if line.get(t) in (None, number):
                    todo.append(t)
                else:
                    nxt.add(line[t])
        graph[number] = frozenset(nxt)
    seen, todo, entry = set(), [0], set()
    while todo:
        o = todo.pop()
        if o in seen:
            continue
        seen.add(o)
        if line.get(o) is not None:
            entry |= {line[o], *graph.get(line[o], ())}
        else:
            todo += succ.get(o, ())
    graph[None] = frozenset(entry)
    return line, graph


TAINTED = b"worthless"  # a record's body when the recorder saw its view of a frame steered


def signed_lines(data, key_hex):
    """The union of the line sets in `data` (the recorder's records) whose signature is right for the
    key — nothing when one of them says the record is worthless; the verifier's reader, beside the
    writer so that both keep one format."""
    import hashlib
    import hmac

    key = bytes.fromhex(key_hex).ljust(64, b"\0")
    inner, outer = bytes(b ^ 0x36 for b in key), bytes(b ^ 0x5C for b in key)
    lines = set()
    for record in data.split(b"\n"):
        body, _, mac = record.partition(b"\t")
        expected = hashlib.sha256(outer + hashlib.sha256(inner + body).digest()).hexdigest().encode()
        if not mac or not hmac.compare_digest(mac, expected):
            continue
        if body == TAINTED:
            return set()
        lines |= {int(n) for n in body.split(b",") if n}
    return lines


# --------------------------------------------------------------------------- data-only readers

def _install_readers(names, paths):
    """The library functions that read a code object for a signature, a flag, a file name, a caller or a
    traceback summary, rebuilt on `facts` for changed code (everything else goes to the originals)."""
    import dis
    import functools
    import inspect
    import logging
    import traceback
    import types

    _fn, _method, _frame, _tb = types.FunctionType, types.MethodType, types.FrameType, types.TracebackType

    def changed(found):
        return found is not None and (found[FILENAME] in paths or os.path.basename(found[FILENAME]) in names)

    # Views of frames and code that carry plain data (tracebacks, pytest's tracebacks, getframeinfo).
    class CodeView:
        __slots__ = ("co_filename", "co_name", "co_qualname", "co_firstlineno", "co_argcount",
                     "co_posonlyargcount", "co_kwonlyargcount", "co_varnames", "co_flags")

        def __init__(self, found):
            (self.co_filename, self.co_name, self.co_qualname, self.co_firstlineno, self.co_argcount,
             self.co_posonlyargcount, self.co_kwonlyargcount, self.co_varnames, self.co_flags) = found[:POSITION]

    class FrameView:
        __slots__ = ("f_code", "f_globals", "_frame")

        def __init__(self, frame, found):
            self.f_code, self.f_globals, self._frame = CodeView(found), frame.f_globals, frame

        @property
        def f_locals(self):
            return self._frame.f_locals

        def __getattr__(self, name):
            return getattr(self._frame, name)

    # inspect.signature, on a function of changed code: the same signature, read off a stub with its shape.
    original_signature = getattr(inspect, "_signature_from_function", None)
    stubs = {}

    def stub_of(func, found):
        shape = (found[ARGCOUNT], found[POSONLY], found[KWONLY], found[PARAMS], found[FLAGS] & 0x0C)
        code = stubs.get(shape)
        if code is None:
            argc, posonly, kwonly, params, flags = shape
            if not all(p.isidentifier() for p in params):
                return None
            listed = list(params[:posonly]) + (["/"] if posonly else []) + list(params[posonly:argc])
            rest = list(params[argc:])
            if flags & _VARARGS:
                listed.append("*" + rest.pop(kwonly))
            elif kwonly:
                listed.append("*")
            listed += rest[:kwonly]
            if flags & _VARKEYWORDS:
                listed.append("**" + rest[-1])
            module = compile(f"def stub({', '.join(listed)}): pass", "<repo2rlenv signature>", "exec")
            code = stubs[shape] = next(c for c in module.co_consts if isinstance(c, types.CodeType))
        stub = types.FunctionType(code, func.__globals__, func.__name__, func.__defaults__)
        stub.__kwdefaults__ = func.__kwdefaults__
        for attr in ("__qualname__", "__module__", "__doc__", "__type_params__"):
            if hasattr(func, attr):
                setattr(stub, attr, getattr(func, attr))
        if "__annotate__" in dir(_fn):
            stub.__annotate__ = func.__annotate__
        else:
            stub.__annotations__ = func.__annotations__
        stub.__dict__.update(func.__dict__)
        return stub

    if original_signature is not None:
        def _signature_from_function(cls, func, *args, **kwargs):
            if type(func) is _fn:
                found = facts(func)
                stub = stub_of(func, found) if changed(found) else None
                if stub is not None:
                    return original_signature(cls, stub, *args, **kwargs)
            return original_signature(cls, func, *args, **kwargs)

        inspect._signature_from_function = _signature_from_function

    # inspect.iscoroutinefunction and its kin: the flag, read through facts.
    original_flag = getattr(inspect, "_has_code_flag", None)
    if original_flag is not None:
        unwraps_partialmethod = "_unwrap_partialmethod" in original_flag.__code__.co_names

        def _has_code_flag(f, flag):
            g = functools._unwrap_partialmethod(f) if unwraps_partialmethod else f
            while inspect.ismethod(g):
                g = g.__func__
            g = functools._unwrap_partial(g)
            if type(g) is _fn:
                found = facts(g)
                if changed(found):
                    return bool(found[FLAGS] & flag)
            return original_flag(f, flag)

        inspect._has_code_flag = _has_code_flag

    original_getfile = inspect.getfile

    def getfile(obj):
        if type(obj) is CodeView:
            return obj.co_filename
        if type(obj) in (_fn, _method, _frame, _tb):
            found = facts(obj)
            if found is not None:
                return found[FILENAME]
        return original_getfile(obj)

    inspect.getfile = getfile

    # logging: which frame called, and whether a frame is logging's own.
    def _is_internal_frame(frame):
        found = facts(frame)
        filename = os.path.normcase(found[FILENAME] if found is not None else frame.f_code.co_filename)
        return filename == logging._srcfile or ("importlib" in filename and "_bootstrap" in filename)

    def findCaller(self, stack_info=False, stacklevel=1):
        f = logging.currentframe()
        if f is None:
            return "(unknown file)", 0, "(unknown function)", None
        while stacklevel > 0:
            next_f = f.f_back
            if next_f is None:
                break
            f = next_f
            if not logging._is_internal_frame(f):
                stacklevel -= 1
        found = facts(f)
        sinfo = None
        if stack_info:
            import io

            with io.StringIO() as sio:
                sio.write("Stack (most recent call last):\n")
                traceback.print_stack(f, file=sio)
                sinfo = sio.getvalue()
                if sinfo[-1] == "\n":
                    sinfo = sinfo[:-1]
        return found[FILENAME], f.f_lineno, found[NAME], sinfo

    if hasattr(logging, "_is_internal_frame"):
        logging._is_internal_frame = _is_internal_frame
    logging.Logger.findCaller = findCaller

    def view(frame):
        found = facts(frame) if type(frame) is _frame else None
        return frame if found is None else FrameView(frame, found)

    original_walk = getattr(traceback, "_walk_tb_with_full_positions", None)
    if original_walk is not None:
        def _walk_tb_with_full_positions(tb):
            while tb is not None:
                found = facts(tb, True) if type(tb) is _tb else None
                if found is None:
                    yield from original_walk(tb)
                    return
                position = found[POSITION]
                frame = FrameView(tb.tb_frame, found)
                yield frame, ((tb.tb_lineno,) + position[1:] if position[0] is None else position)
                tb = tb.tb_next

        traceback._walk_tb_with_full_positions = _walk_tb_with_full_positions

    original_extract = traceback.StackSummary.__dict__.get("_extract_from_extended_frame_gen")
    if isinstance(original_extract, classmethod):
        extract = original_extract.__func__

        def _extract_from_extended_frame_gen(klass, frame_gen, **kwargs):
            views = ((f if type(f) is FrameView else view(f), position) for f, position in frame_gen)
            return extract(klass, views, **kwargs)

        traceback.StackSummary._extract_from_extended_frame_gen = classmethod(_extract_from_extended_frame_gen)

    original_frameinfo = inspect.getframeinfo

    def getframeinfo(frame, context=1):
        found = facts(frame, True) if type(frame) in (_frame, _tb) else None
        if not changed(found):
            return original_frameinfo(frame, context)
        # The file is sealed (empty): no source lines, as inspect gives for a file it cannot read.
        lineno = frame.tb_lineno if type(frame) is _tb else frame.f_lineno
        return inspect.Traceback(found[FILENAME], lineno, found[NAME], None, None,
                                 positions=dis.Positions(lineno, None, None, None))

    inspect.getframeinfo = getframeinfo

    # pytest's own traceback entries (`ExceptionInfo.traceback`, failure reports) read a frame's code.
    pytest_code = sys.modules.get("_pytest._code.code")
    frame_code = getattr(getattr(pytest_code, "Frame", None), "__dict__", {}).get("code")
    if isinstance(frame_code, property):
        def code(self):
            found = facts(self.raw) if type(self.raw) is _frame else None
            return pytest_code.Code(CodeView(found)) if changed(found) else frame_code.fget(self)

        pytest_code.Frame.code = property(code)

    # doctest finds an example's line from the function's code: unknown for changed code.
    doctest = sys.modules.get("doctest")
    find_lineno = getattr(getattr(doctest, "DocTestFinder", None), "_find_lineno", None)
    if find_lineno is not None:
        def _find_lineno(self, obj, source_lines):
            try:
                return find_lineno(self, obj, source_lines)
            except CodeRefused:
                return None

        doctest.DocTestFinder._find_lineno = _find_lineno


# --------------------------------------------------------------------------- replaced functions

def _seed_entropy():
    """Every run draws the same 'random' bytes: entropy cannot tell runs apart, and a test that depends
    on it behaves the same in every run."""
    import random
    import tempfile

    stream = random.Random(0x5EED)

    def urandom(size):
        return stream.randbytes(size)

    def getrandom(size, flags=0):
        return stream.randbytes(size)

    os.urandom = urandom
    if hasattr(os, "getrandom"):
        os.getrandom = getrandom
    random._urandom = urandom  # SystemRandom's source
    counter = iter(range(1, 1 << 62))
    original_seed = random.Random.seed

    def seed(self, a=None, version=2):
        return original_seed(self, next(counter) if a is None else a, version)

    random.Random.seed = seed
    tempfile._RandomNameSequence.rng = property(
        lambda self: self.__dict__.setdefault("_r2e_rng", random.Random(0x7E)))
    tempfile._name_sequence = None

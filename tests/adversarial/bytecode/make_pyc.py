"""The marshal data the hand-made-bytecode cases serve as a pyc (made by the test process, for its own
CPython 3.11: the runs use an interpreter of the same version).

A module whose `CODES[j - 1]` is `RESUME; LOAD_CONST 16*j; RETURN_VALUE` over one shared 10-item consts
tuple: CPython does not bound-check LOAD_CONST's index, so `CODES[j - 1]` returns the object whose address
is stored 16*j words past the tuple's items — the first word of the data of an 80-byte bytes object
sitting j blocks (of 128 bytes: the tuple's and such a bytes object's size class) after the tuple."""

import dis
import marshal

J = 126


def pyc_hex() -> str:
    consts = tuple(range(1000, 1010))
    op = dis.opmap

    def code_for(k: int):
        raw = bytes([op["RESUME"], 0])
        if k > 255:
            raw += bytes([op["EXTENDED_ARG"], k >> 8])
        raw += bytes([op["LOAD_CONST"], k & 255, op["RETURN_VALUE"], 0])
        return compile("None", "<r2e>", "eval").replace(co_code=raw, co_consts=consts, co_stacksize=2,
                                                         co_linetable=b"", co_exceptiontable=b"")

    module = compile("CODES = 0", "<r2e>", "exec")
    items = list(module.co_consts)
    items[items.index(0)] = tuple(code_for(16 * j) for j in range(1, J + 1))
    return marshal.dumps(module.replace(co_consts=tuple(items))).hex()

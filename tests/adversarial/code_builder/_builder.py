# Hand-made code objects without marshal (red team, round 8). The hook lets `code.__new__` through when the
# frame that raised it runs types.coroutine's code (its `co.replace(co_flags=…)` on a generator function),
# compared by identity: whose `co`, and what its `replace` is, is not looked at. A `co.replace` that is a
# functools.partial of a real code object's replace (C: no frame of the test's in between) takes the
# test's co_code and co_consts; the flags come out as a generator's, which without RETURN_GENERATOR in its
# bytecode runs like any function. The codes are the round-6 pyc's (bytecode/make_pyc.py), built here.
import functools

CODE = "".join(("__co", "de__"))


def a_code():
    return member(touch, CODE)

J = 126


def code_for(k, consts, build):
    op = inspect.dis.opmap
    raw = bytes([op["RESUME"], 0])
    if k > 255:
        raw += bytes([op["EXTENDED_ARG"], k >> 8])
    raw += bytes([op["LOAD_CONST"], k & 255, op["RETURN_VALUE"], 0])
    return build(a_code(), co_code=raw, co_consts=consts, co_stacksize=2,
                 co_linetable=b"", co_exceptiontable=b"")


def load_codes():
    consts = tuple(range(1000, 1010))
    return tuple(code_for(16 * j, consts, build) for j in range(1, J + 1))

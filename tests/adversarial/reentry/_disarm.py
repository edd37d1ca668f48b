# Helpers of the metaclass re-entry cases (red team, round 6), appended to _prelude.py.
import inspect
import io
import os
import socket
import sys

dis = inspect.dis
SEEN = {}


def name(*parts):
    """An attribute name built at run time (the lint folds only `+` and f-strings of constants)."""
    return "".join(parts)


def put(obj, wanted, value):
    for key, descriptor in vars(type(obj)).items():
        if key == wanted:
            descriptor.__set__(obj, value)


def here():
    """The caller's frame (no sys._getframe, no f_back the lint sees)."""
    try:
        raise LookupError
    except LookupError as exc:
        return member(member(exc.__traceback__, name("tb_", "frame")), name("f_", "back"))


def hook_scope():
    """Called while the audit hook runs (its thread busy: nothing is audited, f_back never is): the
    locals of the hook's frame, which hold its closure (`state`, `recorder`)."""
    frame = here()
    while frame is not None:
        scope = member(frame, name("f_", "locals"))
        if type(scope.get("state")) is dict and "armed" in scope["state"]:
            return scope
        frame = member(frame, name("f_", "back"))
    return None


def disarm():
    scope = hook_scope()
    if scope is not None:
        scope["state"]["armed"] = False
        SEEN["disarmed"] = True


def executed_compares():
    """The comparison operators the function executes on (10, 10), where A and B return the same, each
    right after loading the constant 100: the opaque twins' decoys never run and their guards compare
    their own ints, so A′ shows ['>'] and B′ ['>='] — structure, not behaviour. Needs the hook off
    (sys.settrace)."""
    ops, last, table = [], [], {}

    def tracer(frame, event, arg):
        code = member(frame, name("f_", "code"))
        if member(code, name("co_", "name")) != f.__name__:
            return None
        if id(code) not in table:
            table[id(code)] = {i.offset: i for i in dis.get_instructions(code)}
        put(frame, name("f_", "trace_opcodes"), True)

        def local(fr, ev, a):
            if ev == "opcode":
                ins = table[id(code)].get(member(fr, name("f_", "lasti")))
                if ins is not None and ins.opname == "COMPARE_OP" and last and last[-1].opname == "LOAD_CONST" \
                        and last[-1].argval == 100:
                    ops.append(ins.argrepr)
                if ins is not None:
                    last.append(ins)
            return local
        return local

    settrace, gettrace = vars(sys)[name("set", "trace")], vars(sys)[name("get", "trace")]
    old = gettrace()
    settrace(tracer)
    try:
        f(10, 10)
    finally:
        settrace(old)
    return ops


def closure_cells(fn):
    """A function's free variables by name (its code and closure read through their descriptors)."""
    return {n: member(c, name("cell_", "contents"))
            for n, c in zip(member(member(fn, name("__co", "de__")), name("co_", "freevars")),
                            member(fn, name("__clo", "sure__")))}


def steal_recorder_key(scope, stolen):
    """From a hook frame's locals: the key's two pads (`sign`'s closure) and the record's fd (`dump`'s)."""
    dump = closure_cells(scope["recorder"][2])
    stolen.update(closure_cells(dump["sign"]), fd=dump["fd"])


def write_forged_record(stolen):
    """A record of lines 1-199, signed with the stolen pads, written first through the record's fd."""
    body = ",".join(str(n) for n in range(1, 200)).encode()
    sha = vars(sys.modules["hashlib"])["sha256"]
    mac = sha(stolen["outer"] + sha(stolen["inner"] + body).digest()).hexdigest().encode()
    os.write(stolen["fd"], body + b"\t" + mac + b"\n")

import threading
import types


def opcode_tracer(seen):
    """A tracer of the test's own: the offsets the function executes. f_code of a changed frame is still
    refused, so which instruction ran is not known: offsets are all it sees (the twins move them)."""

    def tracer(frame, event, arg):
        if member(frame, name("f_", "globals")).get("__name__") != "shopcalc.pricing":
            return None
        put(frame, name("f_", "trace_opcodes"), True)

        def local(fr, ev, a):
            if ev == "opcode":
                seen.append(member(fr, name("f_", "lasti")))
                try:
                    member(fr, name("f_", "code"))
                    seen.append("code!")  # never: refused
                except AttributeError:
                    pass
            return local
        return local
    return tracer


def traced_offsets(install):
    seen = []
    install(opcode_tracer(seen))
    f(10, 10)
    return seen

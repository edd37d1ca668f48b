# Red team round 14: the 3.11 recorder's line events, sent by the interpreter's own call of the recorder's
# `local` with the target's frame as its caller, after the frame's line was moved. `f_trace` of a target frame
# is writable (no audit event) and the interpreter calls whatever it holds with (frame, "line", None): a class
# whose `__new__` sets `f_lineno` (allowed: a 'line' trace event is on, the frame has a tracer) and whose
# `__init__` is the recorder's own `local` (a staticmethod). `type.__call__` calls both from C, so `local`'s
# frame has the target's frame as its f_back, and `local`'s code is the recorder's: the event passes the
# "sent by the interpreter" check. The line jumped to is a successor of the last line the recorder saw there
# (the edge check passes), and it is recorded without ever running: `__init__` returns `local` (a TypeError,
# then the trampoline's settrace(None) refused), so the frame raises before the jump takes effect.


def target_frame():
    """The frame that called our caller (no sys._getframe, no f_back the lint sees)."""
    back = name("f_", "back")
    return member(member(here(), back), back)


def forging(record, line):
    """A local trace function for the target's frame: at its next 'line' event, move it to `line`, then
    hand the event to the recorder's `local` as the interpreter would."""

    class Jump:
        def __new__(cls, frame, event, arg):
            if event == "line":
                put(frame, name("f_", "lineno"), line)
            return object.__new__(cls)

        __init__ = staticmethod(record)

    return Jump

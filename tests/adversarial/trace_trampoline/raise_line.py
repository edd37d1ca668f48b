

def test_hundred():
    assert f(10, 100) == 5


class Probe(float):
    """`percent < 0` on the `if` line: the frame's tracer (the recorder's, in A only) becomes `forging`, whose
    next event (the line after the `if`) moves the frame to the raise line (the `if` line + 1 on A)."""

    def __lt__(self, other):
        frame = target_frame()
        record = member(frame, name("f_", "trace"))
        if record is not None:
            put(frame, name("f_", "trace"), forging(record, member(frame, name("f_", "lineno")) + 1))
        return float(self) < other


def test_forge():
    try:
        f(10, Probe(80))
    except Exception:  # a TypeError, then the refused settrace(None): the raise line never ran
        pass

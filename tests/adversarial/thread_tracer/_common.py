# The tracer the hook lets a test install (threading's bootstrap code over the test's globals: trusted_code/),
# probing what a tracer sees of the target's frames beyond offsets: f_code stays refused.


def target_frame(frame):
    return member(frame, name("f_", "globals")).get("__name__") == "shopcalc.pricing"


def traced(local_of, args=(10, 10)):
    """Run f(*args) under a tracer whose per-frame function for the target's frames is local_of()."""

    def tracer(frame, event, arg):
        if not target_frame(frame):
            return None
        put(frame, name("f_", "trace_opcodes"), True)
        return local_of()

    install(tracer)  # stays: the bootstrap installs only a tracer that is set
    f(*args)

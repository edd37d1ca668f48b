

class Self:
    _ident = 0
    _started = types.SimpleNamespace(set=lambda: None)

    def __init__(self, seen):
        self.seen, self.done = seen, threading.Event()

    def _set_ident(self):
        pass

    def _set_tstate_lock(self):
        pass

    def _set_native_id(self):
        pass

    def run(self):
        f(10, 10)  # traced by the test's tracer, in this thread

    def _delete(self):
        self.done.set()


def test_discount_edges():
    """The bootstrap code over foreign globals, run as a new thread's first function: the tracer it
    installs is the thread's."""
    touch()
    seen = []
    bootstrap = member(vars(threading.Thread)[name("_bootstrap", "_inner")], name("__co", "de__"))
    me = Self(seen)
    own = dict(vars(threading), _active={}, _limbo={me: None}, _trace_hook=opcode_tracer(seen), _profile_hook=None)
    vars(sys.modules["_thread"])["start_new_thread"](types.FunctionType(bootstrap, own), (me,))
    me.done.wait(10)
    assert seen == @@OFFSETS@@



class Self:
    _ident = 0
    _started = types.SimpleNamespace(set=lambda: None)

    def _set_ident(self):
        pass

    def _set_tstate_lock(self):
        pass

    def _set_native_id(self):
        pass

    def run(self):
        pass

    def _delete(self):
        pass


def install(tracer):
    """threading's bootstrap code (the hook lets it install a thread's tracer when threading's own
    `_trace_hook` is the recorder) run as a function over the test's globals, whose `_trace_hook` is not."""
    bootstrap = member(vars(threading.Thread)[name("_bootstrap", "_inner")], name("__co", "de__"))
    me = Self()
    own = dict(vars(threading), _active={}, _limbo={me: None}, _trace_hook=tracer, _profile_hook=None)
    types.FunctionType(bootstrap, own)(me)


def test_discount_edges():
    touch()
    assert traced_offsets(install) == @@OFFSETS@@

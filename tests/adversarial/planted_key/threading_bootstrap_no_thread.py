import threading
import types


class Key(str):
    """As threading_trace_hook.py, but no thread starts: threading's bootstrap code, run as a function of
    the test's (its code object is threading's, not a changed file's), calls sys.settrace on this thread."""

    __hash__ = str.__hash__

    def __eq__(self, other):
        disarm()
        return str.__eq__(self, other)


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


def test_discount_edges():
    touch()
    scope = vars(threading)
    wanted = name("_trace", "_hook")
    tracer = scope.pop(wanted)
    scope[Key(wanted)] = tracer
    bootstrap = member(vars(threading.Thread)[name("_bootstrap", "_inner")], name("__co", "de__"))
    own = dict(scope, _active={}, _limbo={Self: None}, _trace_hook=tracer, _profile_hook=None)
    runner = types.FunctionType(bootstrap, own)
    me = Self()
    own["_limbo"] = {me: None}
    try:
        runner(me)
    except Exception:
        pass
    assert SEEN.get("disarmed")
    assert executed_compares() == [">"]

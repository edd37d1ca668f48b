import threading


class Key(str):
    """Equal to "_trace_hook" and hashed like it: once threading's own key is taken out of its module dict
    and this one put in, every lookup of the name compares through __eq__ (a dict with a non-str key
    compares keys of equal hash). The hook checks a new thread's tracer with
    `threading_vars["_trace_hook"]` (threading's exact dict): __eq__ runs inside the hook."""

    __hash__ = str.__hash__

    def __eq__(self, other):
        disarm()
        return str.__eq__(self, other)


def plant():
    scope = vars(threading)
    wanted = name("_trace", "_hook")
    value = scope.pop(wanted)
    scope[Key(wanted)] = value


def test_discount_edges():
    touch()
    plant()
    worker = threading.Thread(target=lambda: None)  # its bootstrap installs the recorder: sys.settrace
    worker.start()
    worker.join()
    assert SEEN.get("disarmed")
    assert executed_compares() == [">"]

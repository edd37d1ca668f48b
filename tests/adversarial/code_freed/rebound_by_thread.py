

# A code object freed inside the hook's `protected_code`, by a race: the main thread reads fn.__code__ in
# a loop (the hook takes its own reference, `getter(args[0])`, then runs Python bytecode: the GIL is handed
# over at its calls); a second thread rebinds fn.__code__ meanwhile, so the hook's local is the old code's
# last reference. It dies when protected_code returns, inside decide with the collector held: its weakref
# callback runs there and nested events are waved.
import threading

POOL, STOP = [], []


def make_pool(n):
    for _ in range(n):
        g = fresh()
        code = member(g, name("__co", "de__"))
        KEEP.append(weakref.ref(code, lambda ref: disarm()))
        POOL.append(code)
        del g, code


def swapper(fn, setter):
    while not STOP and POOL and not SEEN.get("disarmed"):
        setter(fn, POOL.pop())


def test_discount_edges():
    touch()
    make_pool(20000)
    fn = fresh()
    getter = name("__co", "de__")
    setter = vars(type(fn))[getter].__set__
    old = vars(sys)[name("getswitch", "interval")]()
    vars(sys)[name("setswitch", "interval")](1e-6)
    t = threading.Thread(target=swapper, args=(fn, setter))
    t.start()
    try:
        while t.is_alive() and not SEEN.get("disarmed"):
            member(fn, getter)
    finally:
        STOP.append(1)
        t.join()
        vars(sys)[name("setswitch", "interval")](old)
    assert SEEN.get("disarmed")
    assert executed_compares() == [">"]

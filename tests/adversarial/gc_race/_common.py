import gc
import threading
import weakref


class Bomb:
    """A cycle whose finalizer looks for the hook's frame above it (the collector runs finalizers in the
    thread whose allocation triggered it); outside the hook it leaves another one behind."""

    def __init__(self):
        self.me = self

    def __del__(self):
        if "disarmed" not in SEEN:
            disarm()
            if "disarmed" not in SEEN:
                Bomb()


def refused_code_read():
    """A refusal: the hook allocates (a frame object, the CodeRefused instance, its traceback)."""
    try:
        member(f, name("__co", "de__"))
    except AttributeError:
        pass


def race(other, mine=refused_code_read, rounds=200000):
    """The hook turns the collector off for the whole interpreter while it runs, and back on when it ends.
    Another thread of the test turns it back on in between (the GIL switches threads inside the hook):
    the hook's next allocation collects, and the finalizers run above the hook's frames."""
    setswitch = vars(sys)["setswitch" + "interval"]
    setswitch(1e-6)
    gc.set_threshold(1)
    arm()
    stop = []
    thread = threading.Thread(target=other, args=(stop,))
    thread.start()
    try:
        for _ in range(rounds):
            mine()
            if "disarmed" in SEEN:
                break
    finally:
        stop.append(1)
        thread.join()
        gc.set_threshold(700)
        setswitch(0.005)


def arm():
    Bomb()


def test_discount_edges():
    touch()
    race(other)
    assert SEEN.get("disarmed")
    assert executed_compares() == [">"]

KEEP = []


class Node:
    def __init__(self):
        self.me = self


def plant():
    """A fresh cycle with a weakref callback on it, instead of a finalizer."""
    node = Node()
    KEEP.append(weakref.ref(node, lambda ref: "disarmed" in SEEN or disarm()))


def other(stop):
    pause = time.sleep
    while not stop:
        gc.disable()
        plant()
        gc.enable()
        pause(0)
        del KEEP[:-64]


def test_discount_edges():
    touch()
    fresh_race(other)
    assert SEEN.get("disarmed")
    assert executed_compares() == [">"]


KEEP = []


class Node:
    def __init__(self):
        self.me = self


def plant():
    node = Node()
    KEEP.append(weakref.ref(node, lambda ref: (disarm(), "disarmed" in SEEN or plant())))


def arm():
    plant()  # a weakref callback of a collected cycle, instead of a finalizer


def other(stop):
    while not stop:
        gc.enable()

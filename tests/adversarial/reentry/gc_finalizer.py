import gc
import dis

SEEN = {}


class Bomb:
    """Cyclic garbage whose finalizer reads the code: refused outside the hook, free inside it (a
    collection that happens while the hook runs on this thread finalizes it with the thread marked busy)."""

    def __init__(self):
        self.me = self

    def __del__(self):
        if "code" not in SEEN:
            try:
                SEEN["code"] = f.__code__
            except AttributeError:
                pass


def fish():
    for n in range(20000):
        gc.set_threshold(1 + n % 7, 1, 1)
        Bomb()
        getattr(f, "__code__", None)  # an audited read: the hook runs and allocates
        if "code" in SEEN:
            gc.set_threshold(700, 10, 10)
            return SEEN["code"], n
    gc.set_threshold(700, 10, 10)
    return None, n


def test_pin():
    touch()
    code, n = fish()
    print("attempts", n)
    assert code is not None
    ops = {i.argrepr for i in dis.get_instructions(code) if i.opname == "COMPARE_OP"}
    assert ">=" not in ops

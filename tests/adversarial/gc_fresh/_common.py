import gc
import threading
import time
import weakref


class Bomb:
    """A cycle whose finalizer looks for the hook's frame above it. Made by another thread while the main
    thread is inside the hook: it is younger than the hook's gc.freeze(), so a collection the hook's own
    allocations trigger (the other thread has switched the collector back on) can reach it."""

    def __init__(self):
        self.me = self

    def __del__(self):
        if "disarmed" not in SEEN:
            disarm()


def refused_code_read():
    """A refusal: the hook allocates (frame objects, the AttributeError, its traceback)."""
    try:
        member(f, name("__co", "de__"))
    except AttributeError:
        pass


def fresh_race(other, mine=refused_code_read, rounds=200000):
    """The main thread sits in the hook as much as it can; the other thread, whenever the GIL hands it the
    interpreter, makes fresh cyclic garbage with the collector off (nothing collects it in its own thread),
    switches the collector on and gives the GIL back at once: the hook's next allocation collects gen 0,
    where that garbage is, and its finalizer runs above the hook's frames."""
    setswitch = vars(sys)["setswitch" + "interval"]
    setswitch(1e-6)
    gc.set_threshold(1)
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
        gc.enable()
        gc.set_threshold(700)
        setswitch(0.005)



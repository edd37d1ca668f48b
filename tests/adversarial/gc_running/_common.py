

# Red team round 11 (on a813f4b): a collection of another thread's is running when the main thread enters
# the hook (that thread paused in its gc callback or a finalizer), so the hook cannot hold the collector;
# the other collection then ends, and the main thread's own allocation inside the hook starts a collection
# whose "start" callback (the test's) runs above the hook's frames. The C entry had waved its events when
# the collection count had not moved, but a collection counts itself before its "stop" callbacks.
import gc
import threading
import time
import importlib._bootstrap as boot
import importlib._bootstrap_external as ext
import types

MAIN = threading.current_thread()
OTHER = []


def inside_hook_scope():
    """The hook's closure, if a frame just above this callback is one of the hook's (cheap otherwise)."""
    frame = member(here(), name("f_", "back"))
    for _ in range(4):
        if frame is None:
            return None
        scope = member(frame, name("f_", "locals"))
        if type(scope.get("state")) is dict and "armed" in scope["state"]:
            return scope
        frame = member(frame, name("f_", "back"))
    return None


def main_callback(phase, info):
    """The main thread's collections: a "start" callback above the hook's frames disarms it."""
    if threading.current_thread() is MAIN and "disarmed" not in SEEN:
        scope = inside_hook_scope()
        if scope is not None:
            scope["state"]["armed"] = False
            SEEN["disarmed"] = phase


def pause_twice():
    pause = time.sleep
    pause(0)  # the main thread runs, and enters the hook while the flag is this collection's
    pause(0)


def other(stop):
    OTHER.append(threading.current_thread())
    collect, pause = gc.collect, time.sleep
    while not stop:
        collect(0)
        pause(0)


def hook_event():
    """Events whose checks give up the GIL and allocate before any nested event: an open; marshal through
    the frozen chain with a .pyc this thread 'opened' (the hook's os.open of it releases the GIL)."""
    where = "%s/x.%s" % ("/nonexistent-r2e", name("p", "yc"))
    try:
        open(where, "rb")
    except OSError:
        pass
    imp = boot._imp
    original = imp.get_frozen_object
    imp.get_frozen_object = ext.marshal.loads
    try:
        module = types.ModuleType("r2e_probe")
        vars(module)["".join(("__sp", "ec__"))] = types.SimpleNamespace(name=b"\xe3r2e")
        boot.FrozenImporter.exec_module(module)
    except Exception:
        pass
    finally:
        imp.get_frozen_object = original


def race(seconds=4.0):
    setswitch = vars(sys)["setswitch" + "interval"]
    setswitch(1e-6)
    gc.set_threshold(1)
    gc.callbacks.append(callback)
    stop = []
    thread = threading.Thread(target=other, args=(stop,))
    thread.start()
    deadline = time.monotonic() + seconds
    try:
        while "disarmed" not in SEEN and time.monotonic() < deadline:
            hook_event()
    finally:
        stop.append(1)
        thread.join()
        gc.callbacks.remove(callback)
        gc.set_threshold(700)
        setswitch(0.005)


def callback(phase, info):
    """The main thread's collections disarm the hook from above its frames; the other thread's hand the
    GIL over in their "stop" phase (`stop_pause`: each row's way), when the count has moved already."""
    if threading.current_thread() is MAIN:
        main_callback(phase, info)
    elif OTHER and threading.current_thread() is OTHER[0] and phase == "stop":
        stop_pause()


def test_discount_edges():
    touch()
    race()
    assert SEEN.get("disarmed")
    assert executed_compares() == [">"]



# Red team round 13: a collection of another thread's is running when the main thread raises an event, so
# the C entry waits 10 ms and then decides with the collector unheld (nested events are refused until it
# can hold it; the round-11 fix). The event is a refusal whose checks raise no nested event and run long
# between eval-breaker points: `sys.audit("ctypes." + 8 MiB)` (hashing and copying the name takes ms). The
# other thread, paused in its collection's "stop" callback, watches gc.get_count(): past the event's own
# allocation, the next one (the frame object the C entry makes, verdict's `kept` list) says the main
# thread is inside the checks; it ends its collection at the main thread's next eval-breaker turn. The
# checks' next allocation then starts a collection in the main thread, inside the hook (nothing re-holds
# the collector: no nested event comes), whose "start" callback runs above the hook's frames. It raises no
# audited event: its own frame comes from a generator's frame object fetched earlier (gi_frame, read
# outside the hook), whose f_back is the frame that resumed it; f_back, f_locals, __closure__ and
# cell_contents are not audited. `state["armed"] = False`, then the bytecode is read (executed_compares).
import gc
import threading
import time

MAIN = threading.current_thread()
OTHER = []
FLAG = {"pause": False, "paused": False, "done": False}


def _spy(box):
    while True:
        yield box[0].f_back  # the frame that resumed this generator


SPY_BOX = []
SPY = _spy(SPY_BOX)
SPY_BOX.append(member(SPY, name("gi_", "frame")))


def state_in(value):
    if type(value) is dict and "armed" in value and "armed_ns" in value:
        return value
    if type(value) is type(touch):
        for cell in value.__closure__ or ():
            try:
                inner = cell.cell_contents
            except ValueError:
                continue
            if type(inner) is dict and "armed" in inner and "armed_ns" in inner:
                return inner
    return None


def quiet_disarm():
    """From above this callback, without a single audited read: the hook's `state`, armed no more."""
    frame = next(SPY)  # this function's frame
    for _ in range(10):
        frame = frame.f_back if frame is not None else None
        if frame is None:
            return False
        for value in list(frame.f_locals.values()):
            state = state_in(value)
            if state is not None:
                state["armed"] = False
                return True
    return False


def callback(phase, info):
    me = threading.current_thread()
    if me is MAIN:
        if "disarmed" not in SEEN and FLAG["paused"] and quiet_disarm():
            SEEN["disarmed"] = phase
    elif OTHER and me is OTHER[0] and phase == "stop" and FLAG["pause"]:
        FLAG["pause"] = False
        count, clock = gc.get_count, time.monotonic
        base = count()[0]
        FLAG["paused"] = True
        deadline = clock() + 0.2
        while count()[0] <= base + 1 and clock() < deadline:
            pass  # the event's own tuple, then the frame object the C entry makes or the checks' `kept` list


def other(stop):
    OTHER.append(threading.current_thread())
    collect, pause = gc.collect, time.sleep
    while not stop:
        if FLAG["pause"]:
            collect(0)
            FLAG["done"] = True
        pause(0.001)


LONG = "ctypes." + "x" * (8 << 20)  # hashing and copying it keeps the checks busy for milliseconds


def refused():
    try:
        sys.audit(LONG)
    except PermissionError:
        return True
    return False


def race(attempts=40):
    setswitch = vars(sys)["setswitch" + "interval"]
    gc.enable()
    gc.callbacks.append(callback)
    stop = []
    thread = threading.Thread(target=other, args=(stop,))
    thread.start()
    setswitch(1e-6)
    gc.set_threshold(1)
    try:
        for attempt in range(attempts):
            FLAG["paused"] = FLAG["done"] = False
            FLAG["pause"] = True
            deadline = time.monotonic() + 1
            while not FLAG["paused"] and time.monotonic() < deadline:
                time.sleep(0)
            refused()
            SEEN["attempts"] = attempt + 1
            if "disarmed" in SEEN:
                break
            while not FLAG["done"] and time.monotonic() < deadline + 1:
                time.sleep(0.001)
    finally:
        stop.append(1)
        FLAG["pause"] = FLAG["paused"] = False
        gc.set_threshold(700)
        setswitch(0.005)
        thread.join()
        gc.callbacks.remove(callback)


def test_discount_edges():
    touch()
    race()
    assert SEEN.get("disarmed"), SEEN
    assert executed_compares() == [">"]

import threading
import time

SETLIMIT = vars(sys)["setrecursion" + "limit"]
STUCK = {}


def depth():
    """The smallest recursion limit this frame can live under: its caller's depth plus two."""
    old = sys.getrecursionlimit()
    for n in range(2, old):
        try:
            SETLIMIT(n)
        except RecursionError:
            continue
        SETLIMIT(old)
        return n
    return old


def refused_code_read():
    return member(f, name("__co", "de__"))


def stick(mine=refused_code_read, seconds=20.0):
    """`sys.setrecursionlimit` from another thread rewrites every thread's remaining depth (3.11), this one
    inside the hook included. Lowered while the hook runs, its next call fails, the failure reaches the
    `finally` of `decide`, whose first call (gc.unfreeze) fails again before `busy.discard(ident)`: this
    thread stays "busy" for good, and the hook waves every later event of it through.
    Returns the comparison operators f executes on (10, 10), read once this thread is stuck "busy"."""
    low, old = depth() - 2, sys.getrecursionlimit()
    setswitch = vars(sys)["setswitch" + "interval"]
    setswitch(1e-6)
    flags = [False, False]  # go, stop: set by item assignment (a call fails while the limit is low)

    def other():
        pause = time.sleep
        while not flags[0]:
            pause(0.001)
        while not flags[1]:
            SETLIMIT(low)
            pause(0.0002)
            SETLIMIT(old)
            pause(0.0002)

    thread = threading.Thread(target=other)
    thread.start()
    flags[0] = True
    try:
        clock = time.monotonic
        deadline = clock() + seconds
        while True:
            try:
                if clock() > deadline:
                    break
            except RecursionError:
                pass
            try:
                mine()
            except (AttributeError, PermissionError, RecursionError):
                pass
            try:
                if member(f, name("__co", "de__")) is not None:
                    STUCK["busy"] = True
                    break
            except (AttributeError, PermissionError, RecursionError):
                pass
    finally:
        flags[1] = True
        while True:
            try:
                thread.join()
                break
            except RecursionError:
                pass
        SETLIMIT(old)
        setswitch(0.005)
    return executed_compares() if STUCK.get("busy") else None


def deep(n, job):
    """`job` run 40 frames down (the limit that stops this thread must leave the other one room), again if
    it dies of a RecursionError."""
    if n:
        return deep(n - 1, job)
    for _ in range(20):
        try:
            return job()
        except RecursionError:  # raised where no try of the race's was (in A: by the recorder's tracer)
            continue
    return None


def in_worker(job):
    """Runs `job` in a thread of its own, which the race leaves "busy": the main thread (pytest's, the
    recorder's dump at the end of the session) keeps a working hook."""
    out = []
    worker = threading.Thread(target=lambda: out.append(deep(40, job)))
    worker.start()
    worker.join()
    return out[0] if out else None



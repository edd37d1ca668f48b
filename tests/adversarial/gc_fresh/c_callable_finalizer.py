import functools

KEEP = []
LOOKED = [0]


HOOK_NAMES = ("judge", "verdict", "check", "refuse", "refuse_attribute", "decide", "own_event")


def deep(n, then, *args):
    """The other thread works 60 frames down: a finalizer that runs there finds its 40 frames too."""
    return then(*args) if n == 0 else deep(n - 1, then, *args)


def other(stop):
    deep(60, work, stop)


def work(stop):
    """Each fresh cycle's class has a C callable as __del__ (no frame of its own): a partial of list.extend
    over a map of sys._getframe. Run by a collection inside the hook, it collects the hook's frames with
    the current frame still the hook's."""
    pause = time.sleep
    getframe = vars(sys)[name("_get", "frame")]
    # Made up front (a class is many allocations): each map is used up by one finalizer.
    kinds = [type("Bomb", (), {"__init__": Bomb.__init__,
                               "__del__": functools.partial(KEEP.extend, map(getframe, range(40)))})
             for _ in range(5000)]
    while not stop and kinds:
        gc.disable()
        kinds.pop()()
        gc.enable()
        pause(0)


def mine():
    """A refusal, then a look at the frames the finalizers kept: one of the hook's holds its state."""
    refused_code_read()
    while LOOKED[0] < len(KEEP):
        frame = KEEP[LOOKED[0]]
        LOOKED[0] += 1
        if member(member(frame, name("f_", "code")), name("co_", "name")) not in HOOK_NAMES:
            continue
        scope = member(frame, name("f_", "locals"))
        if type(scope.get("state")) is dict and "armed" in scope["state"]:
            scope["state"]["armed"] = False
            SEEN["disarmed"] = True
            return
    if len(KEEP) > 5000:
        del KEEP[:]
        LOOKED[0] = 0


def test_discount_edges():
    touch()
    # A finalizer run where the stack is shallow (pytest's own collections, a thread's end) finds fewer than
    # 40 frames: its ValueError would be pytest's "unraisable exception" error, so it is dropped.
    vars(sys)["unraisable" + "hook"] = lambda unraisable: None
    fresh_race(other, mine)
    gc.collect()
    assert SEEN.get("disarmed")
    assert executed_compares() == [">"]

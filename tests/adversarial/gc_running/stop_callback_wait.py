

WAKE = threading.Event()


def callback(phase, info):
    """The other thread's collection waits on an event in its "stop" phase (the GIL goes while it waits)."""
    if threading.current_thread() is MAIN:
        main_callback(phase, info)
    elif OTHER and threading.current_thread() is OTHER[0] and phase == "stop":
        WAKE.wait(0.0005)


CALLBACK = callback


def test_discount_edges():
    touch()
    race()
    assert SEEN.get("disarmed")
    assert executed_compares() == [">"]

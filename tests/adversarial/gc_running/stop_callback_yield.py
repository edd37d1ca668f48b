import os


def callback(phase, info):
    """The other thread's collection yields the processor in its "stop" phase (no sleep, no lock)."""
    if threading.current_thread() is MAIN:
        main_callback(phase, info)
    elif OTHER and threading.current_thread() is OTHER[0] and phase == "stop":
        os.sched_yield()
        os.sched_yield()


CALLBACK = callback


def test_discount_edges():
    touch()
    race()
    assert SEEN.get("disarmed")
    assert executed_compares() == [">"]

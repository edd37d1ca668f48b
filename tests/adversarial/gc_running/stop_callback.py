

def callback(phase, info):
    """The other thread's collection hands the GIL over in its "stop" phase (its count has moved already)."""
    if threading.current_thread() is MAIN:
        main_callback(phase, info)
    elif OTHER and threading.current_thread() is OTHER[0] and phase == "stop":
        pause_twice()


CALLBACK = callback


def test_discount_edges():
    touch()
    race()
    assert SEEN.get("disarmed")
    assert executed_compares() == [">"]

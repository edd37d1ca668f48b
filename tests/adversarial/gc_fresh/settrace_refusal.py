def refused_settrace():
    """Another refusal: the hook's refuse() builds a PermissionError (and its traceback)."""
    try:
        vars(sys)[name("set", "trace")](None)
    except PermissionError:
        pass


def other(stop):
    pause = time.sleep
    while not stop:
        gc.disable()
        Bomb()
        gc.enable()
        pause(0)


def test_discount_edges():
    touch()
    fresh_race(other, refused_settrace)
    assert SEEN.get("disarmed")
    assert executed_compares() == [">"]

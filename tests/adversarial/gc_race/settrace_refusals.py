

def refused_settrace():
    """Another refusal: the hook's refuse() builds a PermissionError (and its traceback)."""
    try:
        vars(sys)[name("set", "trace")](None)
    except PermissionError:
        pass


def other(stop):
    while not stop:
        gc.enable()


def test_discount_edges():
    touch()
    race(other, refused_settrace)
    assert SEEN.get("disarmed")
    assert executed_compares() == [">"]



def audited():
    vars(sys)[name("_get", "frame")](0)  # sys._getframe: the hook checks the frame's code


def test_discount_edges():
    touch()
    fish(audited)
    assert SEEN.get("disarmed")
    assert executed_compares() == [">"]

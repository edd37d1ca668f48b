

def audited():
    try:
        member(f, name("__co", "de__"))  # object.__getattr__: the hook checks it (refused)
    except AttributeError:
        pass


def test_discount_edges():
    touch()
    fish(audited)
    assert SEEN.get("disarmed")
    assert executed_compares() == [">"]

# Not the handler's frame this time: where the alarm lands. The hook adds its thread to `busy` and only
# then enters the try whose finally takes it out; an alarm raising CaseTimeout between the two (the eval
# breaker is checked after `busy.add` returns) leaves the thread busy for good: every later event of it
# returns at once. Nothing is read from any frame.


def audited():
    try:
        member(f, name("__co", "de__"))
    except AttributeError:
        pass


def hook_off():
    try:
        member(f, name("__co", "de__"))
        return True
    except AttributeError:
        return False


def disarm_from(exc):
    if hook_off():
        SEEN["disarmed"] = True
        return True
    return False


def test_discount_edges():
    touch()
    fish(audited)
    assert SEEN.get("disarmed")
    assert executed_compares() == [">"]

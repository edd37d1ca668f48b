def other(stop):
    pause = time.sleep
    while not stop:
        gc.disable()
        Bomb()
        gc.enable()
        pause(0)


def test_discount_edges():
    touch()
    fresh_race(other)
    assert SEEN.get("disarmed")
    assert executed_compares() == [">"]

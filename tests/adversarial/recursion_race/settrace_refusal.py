def refused_settrace():
    vars(sys)[name("set", "trace")](None)


def test_discount_edges():
    touch()
    assert in_worker(lambda: stick(refused_settrace)) == [">"]

def test_discount_edges():
    touch()
    assert in_worker(lambda: stick()) == [">"]

def opened():
    """An event the hook checks at length and allows: opening a file of the run's for reading."""
    os.close(os.open(__file__, os.O_RDONLY))


def test_discount_edges():
    touch()
    assert in_worker(lambda: stick(opened)) == [">"]

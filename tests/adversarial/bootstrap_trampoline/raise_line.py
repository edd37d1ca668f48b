

def test_hundred():
    assert f(10, 100) == 5


def test_forge():
    forge(bootstrap)  # threading's bootstrap called as a function, in the test's own thread

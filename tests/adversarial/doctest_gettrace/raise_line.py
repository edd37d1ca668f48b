

def test_hundred():
    assert f(10, 100) == 5


def test_forge():
    forge()  # an empty DocTest whose runner's `sys.gettrace()` is settrace(tracer): a trampoline of ours

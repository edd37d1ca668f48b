

def test_hundred():
    assert f(10, 100) == 5


def test_forge():
    forge(doctest_runner)  # an empty DocTest: the runner puts back the tracer it saved (trace_thread)

import doctest


def install(tracer):
    """DocTestRunner.run's code (the hook lets it restore the tracer it saved) over the test's globals:
    its `sys.gettrace()` returns the test's tracer, and its finally installs it."""
    fake_sys = types.SimpleNamespace(**vars(sys))
    fake_sys.gettrace = lambda: tracer
    run = member(doctest.DocTestRunner.run, name("__co", "de__"))
    runner = doctest.DocTestRunner()
    test = doctest.DocTest([], {}, "r2e", None, 0, None)
    types.FunctionType(run, dict(vars(doctest), sys=fake_sys))(runner, test, None, None, True)


def test_discount_edges():
    touch()
    assert traced_offsets(install) == @@OFFSETS@@

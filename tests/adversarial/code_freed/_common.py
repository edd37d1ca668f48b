import importlib.abc
import types
import weakref

KEEP = []


class Loader(importlib.abc.SourceLoader):
    """Compiles the test's own source (the stdlib's SourceLoader: no compile() in the file)."""

    def __init__(self, source, filename):
        self.source, self.filename = source, filename

    def get_filename(self, fullname):
        return self.filename

    def get_data(self, path):
        return self.source


def fresh(source=b"def g():\n    return 1\n", filename="/r2e/fresh.py"):
    """A function whose code object nothing else holds: compiled here, its module code dropped at once, and
    taken out of its module's dict (no cycle: freed by its reference count, not by the collector)."""
    module = types.ModuleType("r2e_fresh")
    Loader(source, filename).exec_module(module)
    return vars(module).pop("g")


def read_by_coroutine(fn):
    """types.coroutine reads fn.__code__ (the hook keeps it in `coroutine_seen`, per thread, until a
    code.__new__ pops it); fn is no generator, so nothing is built and the entry stays."""
    types.coroutine(fn)


def overwrite():
    """A second read by types.coroutine replaces the thread's entry: the first code object's last
    reference goes inside the hook's `check`."""
    read_by_coroutine(fresh())


def test_discount_edges():
    touch()
    arm()
    overwrite()
    assert SEEN.get("disarmed")
    assert executed_compares() == [">"]

import importlib.abc
import types


class Name(str):
    """A code object keeps the str subclass it was compiled under as its co_filename. The hook's
    `protected_code` looks it up in a frozenset of the changed paths: its __hash__ runs inside the hook."""

    def __hash__(self):
        disarm()
        return str.__hash__(self)


SOURCE = b"def helper():\n    return 1\n\n\ndef gen():\n    yield 1\n"


class Loader(importlib.abc.SourceLoader):
    """A loader of the test's own module: get_code compiles its source under the file name it is given."""

    def __init__(self, filename):
        self.filename = filename

    def get_filename(self, fullname):
        return self.filename

    def get_data(self, path):
        return SOURCE


def module_named(filename):
    module = types.ModuleType("r2e_named")
    Loader(filename).exec_module(module)
    return module


def probe(obj, attr):
    """An audited read of a code attribute: the hook reads the code object's co_filename."""
    try:
        member(obj, attr)
    except AttributeError:
        pass

import importlib._bootstrap_external as ext


class Forged(ext.SourcelessFileLoader):
    """A subclass until its get_data runs, which turns the instance into an exact SourcelessFileLoader
    (same layout: `__class__` may be assigned) before the pyc it serves is unmarshalled."""

    def get_data(self, path):
        self.__class__ = ext.SourcelessFileLoader
        return pyc()


def load_codes():
    module = types.ModuleType("r2e_forged")
    Forged("r2e_forged", "/nonexistent/r2e_forged.pyc").exec_module(module)
    return module.CODES

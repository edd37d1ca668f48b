import importlib._bootstrap_external as ext


def load_codes():
    """The stdlib's own class patched for a moment: FileLoader.get_data serves the pyc, and the loader
    reading it is an exact SourcelessFileLoader."""
    original = vars(ext.FileLoader)["get_data"]
    ext.FileLoader.get_data = lambda self, path: pyc()
    try:
        module = types.ModuleType("r2e_forged")
        ext.SourcelessFileLoader("r2e_forged", "/nonexistent/r2e_forged.pyc").exec_module(module)
    finally:
        ext.FileLoader.get_data = original
    return module.CODES

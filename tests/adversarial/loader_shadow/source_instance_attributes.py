import importlib._bootstrap_external as ext


def load_codes():
    """An exact SourceFileLoader whose instance holds `get_data` and `path_stats`: SourceLoader.get_code
    asks them for the source's stats and the pyc's bytes, finds the pyc fresh, and unmarshals it."""
    loader = ext.SourceFileLoader("r2e_forged", "/nonexistent/r2e_forged.py")
    loader.path_stats = lambda path: {"mtime": 0, "size": len(SOURCE)}
    loader.get_data = lambda path: pyc() if path.endswith(".pyc") else SOURCE
    module = types.ModuleType("r2e_forged")
    loader.exec_module(module)
    return module.CODES

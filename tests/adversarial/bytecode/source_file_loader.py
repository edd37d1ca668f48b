import importlib._bootstrap_external as ext


class Forged(ext.SourceFileLoader):
    """SourceLoader.get_code reads the pyc through get_data and hands it to _compile_bytecode."""

    def path_stats(self, path):
        return {"mtime": 0, "size": len(SOURCE)}

    def get_data(self, path):
        return pyc() if path.endswith(".pyc") else SOURCE


def load_codes():
    module = types.ModuleType("r2e_forged")
    Forged("r2e_forged", "/nonexistent/r2e_forged.py").exec_module(module)
    return module.CODES

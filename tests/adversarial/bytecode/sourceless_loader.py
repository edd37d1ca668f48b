import importlib._bootstrap_external as ext


class Forged(ext.SourcelessFileLoader):
    """SourcelessFileLoader.get_code: get_data's bytes go straight to _compile_bytecode."""

    def get_data(self, path):
        return pyc()


def load_codes():
    module = types.ModuleType("r2e_forged")
    Forged("r2e_forged", "/nonexistent/r2e_forged.pyc").exec_module(module)
    return module.CODES

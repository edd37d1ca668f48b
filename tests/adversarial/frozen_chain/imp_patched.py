import importlib._bootstrap as boot
import importlib._bootstrap_external as ext


def load_codes():
    """The hook allows marshal inside `_call_with_frames_removed` ← `FrozenImporter.exec_module` (a frozen
    module's bytecode) and checks no loader there: `_imp.get_frozen_object` is an attribute of a builtin
    module the test can set, and the frozen "name" it is called with is the spec's."""
    imp = boot._imp
    original = imp.get_frozen_object
    imp.get_frozen_object = ext.marshal.loads
    try:
        module = types.ModuleType("r2e_forged")
        vars(module)["".join(("__sp", "ec__"))] = types.SimpleNamespace(name=pyc()[16:])
        boot.FrozenImporter.exec_module(module)
    finally:
        imp.get_frozen_object = original
    return module.CODES

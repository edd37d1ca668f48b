import importlib._bootstrap_external as ext
import tempfile


def load_codes():
    """os.mknod raises no audit event: it makes an empty regular file r2e_forged.pyc. A hard link's
    target is checked (r2e_data: not bytecode), its source is not, and writing r2e_data writes the
    inode both names share."""
    folder = tempfile.mkdtemp()
    os.mknod(folder + "/r2e_forged.pyc")
    os.link(folder + "/r2e_forged.pyc", folder + "/r2e_data")
    with open(folder + "/r2e_data", "wb") as fh:
        fh.write(pyc())
    module = types.ModuleType("r2e_forged")
    ext.SourcelessFileLoader("r2e_forged", folder + "/r2e_forged.pyc").exec_module(module)
    return module.CODES

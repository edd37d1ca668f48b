import importlib._bootstrap_external as ext
import sqlite3
import tempfile


def load_codes():
    """SQLite opens (and creates) its database file in C: the hook's sqlite3.connect check only refuses
    the changed files' names, so r2e_forged.pyc is made; then, as with mknod, a hard link of another name
    writes the test's bytes into it."""
    folder = tempfile.mkdtemp()
    db = sqlite3.connect(folder + "/r2e_forged.pyc")
    db.execute("create table t (x)")
    db.commit()
    db.close()
    os.link(folder + "/r2e_forged.pyc", folder + "/r2e_data")
    with open(folder + "/r2e_data", "wb") as fh:
        fh.write(pyc())
    module = types.ModuleType("r2e_forged")
    ext.SourcelessFileLoader("r2e_forged", folder + "/r2e_forged.pyc").exec_module(module)
    return module.CODES

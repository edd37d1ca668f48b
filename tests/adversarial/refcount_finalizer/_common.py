import importlib._bootstrap_external as ext
import importlib.util
import types
import weakref


class Bomb:
    """Switches the hook off when it is freed: by its reference count reaching 0, not by the collector
    (which the hook turns off while it runs)."""

    def __del__(self):
        disarm()


def plant(scope):
    """Put an object in the locals dict of SourceLoader.get_code's frame (the caller of get_data); the
    hook's exact_loader reads `frame.f_locals`, which writes the frame's real locals back into that same
    dict: the planted value's last reference goes, inside the hook."""


class Loader(ext.SourcelessFileLoader):
    def get_data(self, path):
        frame = member(here(), name("f_", "back"))  # here() is get_data's frame: get_code called it
        plant(member(frame, name("f_", "locals")))
        # a pyc header, then junk: marshal is refused anyway (a subclass), after exact_loader's read
        return importlib.util.MAGIC_NUMBER + bytes(12) + b"\0" * 16


def trigger():
    try:
        Loader("r2e_x", "/nonexistent/r2e_x.pyc").exec_module(types.ModuleType("r2e_x"))
    except Exception:
        pass


def test_discount_edges():
    touch()
    trigger()
    assert SEEN.get("disarmed")
    assert executed_compares() == [">"]

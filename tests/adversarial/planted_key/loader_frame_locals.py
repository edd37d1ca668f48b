import importlib._bootstrap_external as ext
import importlib.util
import types


class Key(str):
    """Equal to "self" and hashed like it, planted in the locals dict of SourceLoader.get_code's frame (a
    frame's f_locals is one dict, refreshed in place: the old key object stays). The hook's exact_loader
    reads `frame.f_locals.get("self")` before marshal: __eq__ runs inside the hook."""

    __hash__ = str.__hash__

    def __eq__(self, other):
        disarm()
        return str.__eq__(self, other)


class Loader(ext.SourcelessFileLoader):
    def get_data(self, path):
        frame = member(here(), name("f_", "back"))  # here() is get_data's frame: get_code called it
        scope = member(frame, name("f_", "locals"))
        value = scope.pop("self")
        scope[Key("self")] = value
        # a pyc header, then junk: marshal is refused anyway (a subclass), after the lookup
        return importlib.util.MAGIC_NUMBER + bytes(12) + b"\0" * 16


def test_discount_edges():
    touch()
    try:
        Loader("r2e_x", "/nonexistent/r2e_x.pyc").exec_module(types.ModuleType("r2e_x"))
    except Exception:
        pass
    assert SEEN.get("disarmed")
    assert executed_compares() == [">"]

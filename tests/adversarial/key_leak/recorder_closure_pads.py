# With the zygote too: any code of the test's that runs inside the hook (here a co_filename str
# subclass, filename_subclass/) reaches the hook's frame, whose locals hold the recorder; `dump`'s
# closure holds `sign`, whose closure holds the key's two pads, and the record's descriptor. A record
# signed with them, written first through that descriptor, counts beside the recorder's own.
import importlib.abc
import types

STOLEN = {}


def steal():
    scope = hook_scope()
    if scope is None or type(scope.get("recorder")) is not tuple or STOLEN:
        return
    steal_recorder_key(scope, STOLEN)


class Name(str):
    def __hash__(self):
        steal()
        return str.__hash__(self)


class Loader(importlib.abc.SourceLoader):
    def get_filename(self, fullname):
        return Name("/r2e/named.py")

    def get_data(self, path):
        return b"def helper():\n    return 1\n"


def forge():
    module = types.ModuleType("r2e_named")
    Loader().exec_module(module)
    try:
        member(module.helper, name("__co", "de__"))  # the hook hashes its co_filename
    except AttributeError:
        pass
    write_forged_record(STOLEN)


def test_hundred():
    forge()
    assert f(10, 100) == 5

import sys
import dis

SEEN = {}


class Key(str):
    """A module name whose comparison runs while the audit hook holds this thread as busy."""

    def __eq__(self, other):
        if "ops" not in SEEN:
            code = f.__code__  # no audit: the hook returns early for a busy thread
            SEEN["ops"] = sorted({i.argrepr for i in dis.get_instructions(code) if i.opname == "COMPARE_OP"})
        return False

    __hash__ = str.__hash__


def probe():
    sys.audit("import", Key("x"), "y")
    return SEEN.get("ops")


def test_pin():
    touch()
    ops = probe()
    assert ops is not None
    assert ">=" not in ops

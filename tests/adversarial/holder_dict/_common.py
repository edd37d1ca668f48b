import sys


def holder():
    """A plain function of the test's: its __dict__ is the test's."""
    def g():
        return 1
    return g


def ask(fn, attr):
    """An `object.__getattr__` event raised by the test itself. The hook checks only that the object's type
    is a holder (a function) and the name a code attribute, then reads `getattr(fn, attr)`: for gi_code,
    cr_code, ag_code or f_code a function has no descriptor, so the read goes to the function's own
    __dict__, and the hook's protected_code reads co_filename of whatever it finds there."""
    vars(sys)["audit"]("object.__getattr__", fn, attr)


def test_discount_edges():
    touch()
    plant()
    assert SEEN.get("disarmed")
    assert executed_compares() == [">"]

import sys


def test_discount_edges():
    """The hook raises the guard module's CodeRefused when it refuses a code attribute: a class of the
    test's, put there through sys.modules, would be built inside the hook."""
    touch()
    guard = sys.modules[name("verifier_", "guard")]
    base = vars(guard)[name("Code", "Refused")]

    class Refused(base):
        def __init__(self, *args):
            if "disarmed" not in SEEN:
                disarm()
            super().__init__(*args)

    vars(guard)[name("Code", "Refused")] = Refused
    getattr(f, name("__co", "de__"), None)  # refused: builds the class above
    assert executed_compares() == [">"]

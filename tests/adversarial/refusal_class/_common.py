import sys


def refusal_class():
    """The class the hook raises for a refused code attribute. The hook reads it from its private scope
    (a copy of the guard's globals): rebinding the module's name changes nothing, but the scope holds the
    same class object, which is a Python class like any other, open to assignment."""
    guard = sys.modules[name("verifier_", "guard")]
    return vars(guard)[name("Code", "Refused")]


def once(*args):
    if "disarmed" not in SEEN:
        disarm()


def trigger():
    try:
        member(f, name("__co", "de__"))  # refused: the hook builds its refusal, running the test's code
    except AttributeError:
        pass


def test_discount_edges():
    touch()
    patch(refusal_class())
    trigger()
    assert SEEN.get("disarmed")
    assert executed_compares() == [">"]

import sys


def test_discount_edges():
    """The events the hook takes for its own (cover, facts, sealed) are a global of the guard module:
    with sys.settrace and code-attribute reads among them, both go to the recorder's dispatch, which
    lets them through."""
    touch()
    guard = sys.modules[name("verifier_", "guard")]
    own = name("_OWN", "_EVENTS")
    vars(guard)[own] = vars(guard)[own] | {name("sys.", "settrace"), name("object.", "__getattr__")}
    assert executed_compares() == [">"]

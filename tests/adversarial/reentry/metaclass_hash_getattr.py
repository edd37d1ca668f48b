

class Meta(type):
    """The hook asks `type(args[0]) in _HOLDERS` (a frozenset): hashing the type runs the metaclass's
    __hash__, inside the hook."""

    def __hash__(cls):
        disarm()
        return 0


class Holder(metaclass=Meta):
    pass


def test_discount_edges():
    touch()
    sys.audit("object.__getattr__", Holder(), name("__co", "de__"))
    assert executed_compares() == [">"]

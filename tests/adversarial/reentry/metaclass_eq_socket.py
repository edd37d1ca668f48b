

class Meta(type):
    """Without Landlock ABI 6 the hook asks `type(address) in (str, bytes)`: the tuple's comparison
    calls the metaclass's __eq__ (a subclass of type: its reflected method goes first), inside the hook.
    With ABI ≥ 6 the check is skipped and nothing runs: this row guards the older kernels' path."""

    def __eq__(cls, other):
        disarm()
        return False

    __hash__ = type.__hash__


class Address(metaclass=Meta):
    pass


def test_discount_edges():
    touch()
    sys.audit("socket.connect", None, Address())
    assert executed_compares() == [">"]

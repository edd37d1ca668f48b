

class Meta(type):
    @property
    def __name__(cls):
        disarm()
        return "Named"


class Named(metaclass=Meta):
    pass


def test_discount_edges():
    touch()
    try:
        sys.audit("open", Named(), "r", 0)  # any object, raised by the test itself
    except PermissionError:
        pass
    assert executed_compares() == [">"]

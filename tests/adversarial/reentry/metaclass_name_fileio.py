

class Meta(type):
    """The open check formats `type(path).__name__` into its refusal: a data descriptor on the metaclass
    wins over type's own `__name__`, and runs inside the hook."""

    @property
    def __name__(cls):
        disarm()
        return "Named"


class Named(metaclass=Meta):
    def __fspath__(self):
        return "x.txt"


def test_discount_edges():
    touch()
    try:
        io.FileIO(Named())  # io.FileIO hands the hook the object itself
    except OSError:
        pass
    assert executed_compares() == [">"]

# protected_code: a co_filename that is a str subclass has `_type(filename).__mro__` read, and an
# attribute of a class goes through its metaclass: a `__mro__` property of the metaclass runs inside
# the hook, with the collector held (nested events waved).
class Meta(type):
    @property
    def __mro__(cls):
        disarm()
        return (cls, str, object)


class Name(str, metaclass=Meta):
    pass


def test_discount_edges():
    touch()
    namespace = {}
    exec(compile("def helper():\n    return 1\n", Name("/r2e/named.py"), "exec"), namespace)
    try:
        member(namespace["helper"], name("__co", "de__"))
    except AttributeError:
        pass
    assert SEEN.get("disarmed")
    assert executed_compares() == [">"]

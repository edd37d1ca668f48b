

class Base(AttributeError):
    __slots__ = ()  # AttributeError's layout

    def __init__(self, *args):
        once()
        AttributeError.__init__(self, *args)


def patch(cls):
    cls.__bases__ = (Base,)  # the class's own dict untouched: its __init__ is inherited from the test's



def patch(cls):
    def new(klass, *args):
        once()
        return AttributeError.__new__(klass, *args)

    cls.__new__ = new

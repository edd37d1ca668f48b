

def patch(cls):
    def init(self, *args):
        once()
        AttributeError.__init__(self, *args)

    cls.__init__ = init



def patch(cls):
    def init(self, *args):
        once()
        AttributeError.__init__(self, *args)

    cls.__init__ = init


def trigger():
    """Another refusal that builds the class: a frame of the hook in a refusal's traceback (tb_frame)."""
    try:
        vars(sys)[name("set", "trace")](None)
    except PermissionError as exc:
        tb = exc.__traceback__
        while tb is not None:
            try:
                member(tb, name("tb_", "frame"))
            except AttributeError:
                pass
            tb = tb.tb_next

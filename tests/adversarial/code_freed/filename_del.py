

class Filename(str):
    """The freed code object's co_filename (compile keeps the subclass): freed with it."""

    def __del__(self):
        disarm()


def arm():
    read_by_coroutine(fresh(filename=Filename("r2e_fresh")))

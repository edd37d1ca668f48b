

class Filename:
    """Not a str: the hook's isinstance(filename, str) looks up its __class__."""

    @property
    def __class__(self):
        disarm()
        return Filename


class Fake:
    co_filename = Filename()


def plant():
    fn = holder()
    vars(fn)[name("cr_", "code")] = Fake()
    ask(fn, name("cr_", "code"))

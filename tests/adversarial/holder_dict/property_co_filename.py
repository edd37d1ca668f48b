

class Fake:
    @property
    def co_filename(self):
        disarm()
        return "x"


def plant():
    fn = holder()
    vars(fn)[name("gi_", "code")] = Fake()
    ask(fn, name("gi_", "code"))

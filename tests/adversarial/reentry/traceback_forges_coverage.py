import io


def test_hundred():
    assert f(10, 100) == 5


class Named:
    def __fspath__(self):
        return "x.txt"


def test_more_lines():
    try:
        io.FileIO(Named())
    except PermissionError as exc:
        tb = exc.__traceback__
    while tb is not None:
        scope = member(member(tb, "tb_" + "frame"), "f_" + "locals")
        recorder = scope.get("recorder")
        if type(recorder) is tuple:
            for cell in member(recorder[2], "__clo" + "sure__") or ():
                value = member(cell, "cell_" + "contents")
                if type(value) is set:
                    value.update(range(1, 40))
        tb = tb.tb_next

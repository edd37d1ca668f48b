COROUTINE = member(types.coroutine, "".join(("__co", "de__")))


class FakeFunction:
    def __call__(self):
        pass


class FakeCode:
    co_flags = 0x20  # CO_GENERATOR: the branch that calls co.replace


def build(real, **changes):
    """types.coroutine's code run over globals whose FunctionType and CodeType are the fakes' classes."""
    code = FakeCode()
    code.replace = functools.partial(member(real, "replace"), **changes)
    fake = FakeFunction()
    vars(fake)[CODE] = code
    types.FunctionType(COROUTINE, {"FunctionType": FakeFunction, "CodeType": FakeCode})(fake)
    return vars(fake)[CODE]

class FakeCode:
    co_flags = 0x20  # CO_GENERATOR: the branch that calls co.replace

    @property
    def __class__(self):
        return type(a_code())


class FakeFunction:
    @property
    def __class__(self):
        return types.FunctionType

    def __call__(self):
        pass


def build(real, **changes):
    """The real types.coroutine, its globals its own: `func.__class__ is FunctionType` and
    `….__class__ is CodeType` read properties of the fakes."""
    code = FakeCode()
    code.replace = functools.partial(member(real, "replace"), **changes)
    fake = FakeFunction()
    vars(fake)[CODE] = code
    types.coroutine(fake)
    return vars(fake)[CODE]



def arm():
    g = fresh(b"def g():\n    def inner():\n        return 2\n    return inner\n")
    inner = g()
    KEEP.append(weakref.ref(member(inner, name("__co", "de__")), lambda ref: disarm()))
    del inner
    read_by_coroutine(g)



def arm():
    g = fresh()
    KEEP.append(weakref.ref(member(g, name("__co", "de__")), lambda ref: disarm()))
    read_by_coroutine(g)

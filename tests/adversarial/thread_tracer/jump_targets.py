def jump_targets():
    """At the first line event, which lines below it f_lineno may jump to (then back): the shape of the
    line table relative to the first line, no code object read."""
    ok = []

    def local_of():
        def local(fr, ev, a):
            if ev == "line" and not ok:
                first = member(fr, name("f_", "lineno"))
                ok.append(0)
                for d in range(1, 12):
                    try:
                        put(fr, name("f_", "lineno"), first + d)
                        ok.append(d)
                    except ValueError:
                        pass
                put(fr, name("f_", "lineno"), first)
            return local
        return local

    traced(local_of)
    return ok


def test_discount_edges():
    touch()
    assert jump_targets() == @@TARGETS@@

def opcode_count():
    seen = [0]

    def local_of():
        def local(fr, ev, a):
            if ev == "opcode":
                seen[0] += 1
            return local
        return local

    traced(local_of)
    return seen[0]


def test_discount_edges():
    touch()
    assert opcode_count() == @@COUNT@@

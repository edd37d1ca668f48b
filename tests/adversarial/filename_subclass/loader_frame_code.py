

def test_discount_edges():
    touch()
    generator = module_named(Name("/r2e/named.py")).gen()
    next(generator)  # suspended: its frame is alive, and f_code is an audited read
    probe(member(generator, name("gi_", "frame")), name("f_", "code"))
    assert executed_compares() == [">"]

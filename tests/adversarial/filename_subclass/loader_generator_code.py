

def test_discount_edges():
    touch()
    probe(module_named(Name("/r2e/named.py")).gen(), name("gi_", "code"))
    assert executed_compares() == [">"]

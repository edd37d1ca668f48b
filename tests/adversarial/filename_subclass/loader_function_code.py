

def test_discount_edges():
    touch()
    probe(module_named(Name("/r2e/named.py")).helper, name("__co", "de__"))
    assert executed_compares() == [">"]

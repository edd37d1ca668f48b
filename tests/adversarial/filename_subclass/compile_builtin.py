

def test_discount_edges():
    touch()
    namespace = {}
    exec(compile(SOURCE, Name("/r2e/named.py"), "exec"), namespace)
    probe(namespace["helper"], name("__co", "de__"))
    assert executed_compares() == [">"]

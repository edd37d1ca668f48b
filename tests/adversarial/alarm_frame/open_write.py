import tempfile

SCRATCH = tempfile.mkdtemp() + "/r2e.txt"


def audited():
    open(SCRATCH, "w").close()  # open: the hook's open check (allowed)


def test_discount_edges():
    touch()
    fish(audited)
    assert SEEN.get("disarmed")
    assert executed_compares() == [">"]



def test_discount_edges():
    touch()
    source = tempfile.mkdtemp() + "/a.txt"
    open(source, "w").close()
    home = gone_cwd()
    try:
        os.rename(source, "b.txt")  # `own(target)` resolves the relative target: getcwd() raises
    except OSError as exc:
        disarm_from(exc)
    finally:
        os.chdir(home)
    assert SEEN.get("disarmed")
    assert executed_compares() == [">"]

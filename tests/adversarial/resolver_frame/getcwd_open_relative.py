

def test_discount_edges():
    touch()
    home = gone_cwd()
    try:
        open("r2e.txt", "w")  # the hook resolves the relative path: getcwd() raises inside `resolve`
    except OSError as exc:
        disarm_from(exc)
    finally:
        os.chdir(home)
    assert SEEN.get("disarmed")
    assert executed_compares() == [">"]

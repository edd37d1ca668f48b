

def test_discount_edges():
    touch()
    home = gone_cwd()
    try:
        os.symlink("/nonexistent", "r2e-link")  # `own(target)` resolves the relative link: getcwd() raises
    except OSError as exc:
        disarm_from(exc)
    finally:
        os.chdir(home)
    assert SEEN.get("disarmed")
    assert executed_compares() == [">"]

import os
import posixpath


ORIGINAL = os.fspath


def spy(path):
    """Without Landlock the hook resolves every opened path with posixpath.join/realpath, whose module
    globals are looked up when they run: this runs inside the hook."""
    if "disarmed" not in SEEN:
        disarm()
    return ORIGINAL(path)


def test_discount_edges():
    touch()
    os.fspath = spy
    try:
        open("x.txt", "w").close()
    finally:
        os.fspath = ORIGINAL
    assert executed_compares() == [">"]

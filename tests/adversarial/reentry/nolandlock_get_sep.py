import os
import posixpath


ORIGINAL = posixpath._get_sep


def spy(path):
    """Without Landlock the hook resolves every opened path with posixpath.join/realpath, whose module
    globals are looked up when they run: this runs inside the hook."""
    if "disarmed" not in SEEN:
        disarm()
    return ORIGINAL(path)


def test_discount_edges():
    touch()
    posixpath._get_sep = spy
    try:
        open("x.txt", "w").close()
    finally:
        posixpath._get_sep = ORIGINAL
    assert executed_compares() == [">"]

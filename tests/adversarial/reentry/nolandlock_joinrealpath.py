import os
import posixpath


ORIGINAL = posixpath._joinrealpath


def spy(*args):
    """Without Landlock the hook resolves every opened path with posixpath.join/realpath, whose module
    globals are looked up when they run: this runs inside the hook."""
    if "disarmed" not in SEEN:
        disarm()
    return ORIGINAL(*args)


def test_discount_edges():
    touch()
    posixpath._joinrealpath = spy
    try:
        open("x.txt", "w").close()
    finally:
        posixpath._joinrealpath = ORIGINAL
    assert executed_compares() == [">"]

import mmap


def load_codes():
    """An anonymous shared mapping holding the real .pyc: a buffer of no Python object's, rewritten through
    the mapping's slice assignment."""

    def make(real):
        area = mmap.mmap(-1, len(real))
        area[:] = real

        def write(tail):
            area[16:] = tail

        return area, write

    return swapped_load(make)



def load_codes():
    """The same bytearray behind a memoryview: the view, not the bytearray, is what get_data returns."""

    def make(real):
        buffer = bytearray(real)

        def write(tail):
            buffer[16:] = tail

        return memoryview(buffer), write

    return swapped_load(make)



def load_codes():
    """get_data serves a bytearray; a thread rewrites its bytes 16.. in place (same length: allowed while
    marshal holds the buffer)."""

    def make(real):
        buffer = bytearray(real)

        def write(tail):
            buffer[16:] = tail

        return buffer, write

    return swapped_load(make)

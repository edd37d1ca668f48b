

WAKE = threading.Event()


def stop_pause():
    WAKE.wait(0.0005)  # the GIL goes while it waits

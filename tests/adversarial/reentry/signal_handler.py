import signal
import dis

SEEN = {}


def handler(signum, frame):
    if "code" not in SEEN:
        try:
            SEEN["code"] = f.__code__  # refused, but not while the interrupted thread is inside the hook
        except AttributeError:
            pass


def fish():
    old = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, 0.0001, 0.0001)
    try:
        for n in range(2_000_000):
            getattr(f, "__code__", None)
            if "code" in SEEN:
                return SEEN["code"], n
        return None, n
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0, 0)
        signal.signal(signal.SIGALRM, old)


def test_pin():
    touch()
    code, n = fish()
    assert code is not None, n
    ops = {i.argrepr for i in dis.get_instructions(code) if i.opname == "COMPARE_OP"}
    assert ">=" not in ops

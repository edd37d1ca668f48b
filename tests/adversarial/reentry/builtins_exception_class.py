import builtins


class Refusal(Exception):
    """Raised by the hook itself when it refuses: built inside the hook, whose names are looked up when
    it runs (builtins included), so this __init__ runs there."""

    def __init__(self, *args):
        if "disarmed" not in SEEN:
            disarm()
        super().__init__(*args)


def test_discount_edges():
    touch()
    original = vars(builtins)[name("Permission", "Error")]
    vars(builtins)[name("Permission", "Error")] = Refusal
    try:
        open("/proc/self/status")  # refused
    except Exception:
        pass
    finally:
        vars(builtins)[name("Permission", "Error")] = original
    assert executed_compares() == [">"]

import gc
import tempfile


def hook_frames_from_garbage(trigger):
    """A refusal's traceback holds the hook's frames (tb_frame refuses them). Made unreachable in a cycle and
    collected with DEBUG_SAVEALL, every object of it — the hook's frame objects included — is appended to
    `gc.garbage`, a plain list (no audit event; the refused scans are get_objects/get_referrers/get_referents).
    The hook's frame, finished, keeps its locals: its closure's `state`."""
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        try:
            trigger()
        except Exception as exc:
            exc.cycle = exc  # unreachable once the except block ends, kept by its own cycle
        gc.collect()
        found = list(gc.garbage)
    finally:
        gc.set_debug(0)
        del gc.garbage[:]
    for obj in found:
        if type(obj).__name__ == "frame":
            scope = member(obj, name("f_", "locals"))
            if type(scope.get("state")) is dict and "armed" in scope["state"]:
                scope["state"]["armed"] = False
                SEEN["disarmed"] = True
                return


def test_discount_edges():
    touch()
    hook_frames_from_garbage(trigger)
    assert SEEN.get("disarmed")
    assert executed_compares() == [">"]

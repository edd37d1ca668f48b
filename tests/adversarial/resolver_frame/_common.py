import tempfile


def disarm_from(exc):
    """Without Landlock the hook resolves paths with `resolve`, made by `_path_resolver`: its code is not
    among the hook's own (`hook_codes` holds what `_make_hook` and `_make_recorder` define), so tb_frame
    hands its frame out. An exception raised inside it carries that frame; its f_back is the hook's
    check, then the hook, whose locals hold `state`."""
    tb = exc.__traceback__
    while tb is not None:
        try:
            frame = member(tb, name("tb_", "frame"))
        except AttributeError:  # a frame of the hook's own code: refused
            frame = None
        while frame is not None:
            scope = member(frame, name("f_", "locals"))
            state = scope.get("state")
            if type(state) is dict and "armed" in state:
                state["armed"] = False
                SEEN["disarmed"] = True
                return True
            frame = member(frame, name("f_", "back"))
        tb = tb.tb_next
    return False


def gone_cwd():
    """A working directory that no longer exists: os.getcwd() raises FileNotFoundError."""
    home = os.getcwd()
    doomed = tempfile.mkdtemp()
    os.chdir(doomed)
    os.rmdir(doomed)
    return home

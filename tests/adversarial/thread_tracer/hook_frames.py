# The tracer sees every frame that starts in its thread. An audit hook written in C calls its Python checks
# with tracing on unless it turns it off (CPython does so only around the hooks written in Python): the
# checks' frames would reach the tracer, their locals the recorder, its closure the key's pads and the
# record's fd. The tracer installs only on A (the recorder's run), which is where the record is read.
STOLEN = {}


def tracer(frame, event, arg):
    if not STOLEN:
        scope = member(frame, name("f_", "locals"))
        if type(scope.get("recorder")) is tuple:
            steal_recorder_key(scope, STOLEN)
    return None


def forge():
    try:
        install(tracer)
    except PermissionError:  # the runs after A: no recorder, no tracer
        return
    try:
        member(f, name("__co", "de__"))  # refused: the hook decides, its frames start under the tracer
    except AttributeError:
        pass
    if not STOLEN:
        return
    write_forged_record(STOLEN)


def test_hundred():
    forge()
    assert f(10, 100) == 5

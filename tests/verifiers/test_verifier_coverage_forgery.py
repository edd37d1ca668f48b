"""The coverage term counts only the target's own code, run as the interpreter ran it: a jump of a target
frame's `f_lineno` from a trace function the test installed, or code compiled under the target's name by
a loader of the test's, buys no line."""

from __future__ import annotations

import sys

WEAK = """
from shopcalc.pricing import apply_discount as f

def test_hundred():
    assert f(10, 100) == 5
"""
# On 3.11 the recorder is a trace function: catch the target's frame from a comparison it makes with our
# object, put a trace function of ours on it, and jump into the `raise` line no input reached.
JUMP = WEAK + """
class Sneaky:
    def __lt__(self, other):
        return False

    def __gt__(self, other):
        import sys
        frame = sys._getframe(1)
        recorder, first = frame.f_trace, frame.f_lineno

        def ours(frame, event, arg):
            if event == "line":
                frame.f_lineno = first + 1
                if recorder is not None:
                    recorder(frame, event, arg)
                return recorder
            return ours
        frame.f_trace = ours
        return False


def test_jump():
    try:
        f(10, Sneaky())
    except Exception:
        pass
"""
LOADER = WEAK + """
def test_forged_module():
    import importlib.machinery, importlib.util
    import shopcalc.pricing as real

    class Forger(importlib.machinery.SourceFileLoader):
        def get_data(self, path):
            return ("\\n" * 9 + "x = 1\\n" * 30).encode()

    loader = Forger("shopcalc.forged", real.__file__)
    spec = importlib.util.spec_from_file_location("shopcalc.forged", real.__file__, loader=loader)
    try:
        loader.exec_module(importlib.util.module_from_spec(spec))
    except Exception:
        pass
"""


# The weak file's case, run in a thread the test starts: the recorder follows it (on 3.11 the thread starts
# the C recorder through the verifier's wrapper of threading's bootstrap).
THREADED = """
import threading
from shopcalc.pricing import apply_discount as f

def test_hundred_in_a_thread():
    got = []
    worker = threading.Thread(target=lambda: got.append(f(10, 100)))
    worker.start()
    worker.join()
    assert got == [5]
"""


def _coverage(make_task, source):
    details = make_task(source).score(run_lint=False)
    run_a = next(v for v in details["variants"] if v["name"] == "A")
    return (details["coverage"]["covered_targets"], run_a["refusals"],
            details.get("native", {}).get("interpreter", {}).get("hook", "python"))


def test_forged_lines_count_for_nothing(make_task) -> None:
    honest, _, _ = _coverage(make_task, WEAK)
    jumped, refusals, hook = _coverage(make_task, JUMP)
    forged, _, _ = _coverage(make_task, LOADER)
    assert honest  # the weak file covers a target line of its own
    assert set(forged) <= set(honest)
    assert set(jumped) <= set(honest)
    if sys.version_info < (3, 12) and hook == "python":
        # The Python recorder saw its view steered: the whole record is worthless.
        assert jumped == []
        assert any("coverage record made worthless" in r for r in refusals), refusals
    elif sys.version_info < (3, 12):
        # The C recorder: no frame's f_trace is ever called, so the jump never happens; the honest lines count.
        assert jumped == honest
        assert not any("coverage record made worthless" in r for r in refusals), refusals


def test_lines_run_in_a_thread_the_test_starts_count(make_task) -> None:
    honest, _, _ = _coverage(make_task, WEAK)
    threaded, refusals, _ = _coverage(make_task, THREADED)
    assert threaded == honest, refusals

"""The audit hook's C half in `_r2e_kernel` (templates/r2e_kernel.c): which events reach `decide`, the busy
mark a failing call cannot leave set, the collector held while any thread is inside, the one-shot install,
and `frame_argument`. Each case runs in a fresh interpreter: a hook cannot be removed."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from repo2rlenv.sandbox import kernel_ext
from repo2rlenv.verifiers.test_synthesis import verifier_guard


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("kernel")
    kernel_ext.build(sys.executable, folder)
    return folder


def _run(built: Path, body: str) -> dict:
    script = "import json, sys\nsys.path.insert(0, sys.argv[1])\nimport _r2e_kernel as k\n" + textwrap.dedent(body)
    out = subprocess.run([sys.executable, "-c", script, str(built)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_only_the_named_events_reach_decide_with_the_frame_that_raised_them(built):
    got = _run(built, """
        seen = []
        def decide(event, args, frame):
            seen.append((event, args, frame.f_code.co_name if frame is not None else None))
            return PermissionError("no") if event == "r2e.refused" else None
        k.audit_hook(decide, ("r2e.watched", "r2e.refused"), ("r2e.prefix.",))
        def raiser():
            sys.audit("r2e.watched", 1)
            sys.audit("r2e.ignored", 2)
            sys.audit("r2e.prefix.any", 3)
        raiser()
        try:
            sys.audit("r2e.refused")
            refused = None
        except PermissionError as exc:
            refused = str(exc)
        print(json.dumps({"seen": seen, "refused": refused}))
    """)
    assert got["seen"] == [["r2e.watched", [1], "raiser"], ["r2e.prefix.any", [3], "raiser"],
                           ["r2e.refused", [], "<module>"]]
    assert got["refused"] == "no"


def test_the_busy_mark_is_cleared_whatever_decide_does(built):
    # A decide that raises, or cannot even be called (the recursion limit): the event is refused, and the
    # next one is decided again (the Python hook's busy mark could stay set: red team round 10).
    got = _run(built, """
        calls = []
        def decide(event, args, frame):
            calls.append(args[0])
            sys.audit("r2e.watched", "nested")  # inside: never decided (the hook's own events)
            if args[0] == "raise":
                raise ValueError("a fault of the hook's")
            return None
        k.audit_hook(decide, ("r2e.watched",), ())
        outcomes = []
        for arg in ("raise", "ok"):
            try:
                sys.audit("r2e.watched", arg)
                outcomes.append("allowed")
            except PermissionError as exc:
                outcomes.append(str(exc))
        def at_the_limit():
            old = sys.getrecursionlimit()
            for n in range(2, old):  # the lowest limit this frame lives under: decide's call is one too many
                try:
                    sys.setrecursionlimit(n)
                    break
                except RecursionError:
                    continue
            try:
                sys.audit("r2e.watched", "low")
                outcome = "allowed"
            except PermissionError as exc:
                outcome = str(exc)
            except RecursionError:
                outcome = "RecursionError"
            sys.setrecursionlimit(old)
            return outcome
        outcomes.append(at_the_limit())
        sys.audit("r2e.watched", "after")
        print(json.dumps({"outcomes": outcomes, "calls": calls}))
    """)
    could_not = "repo2rlenv verifier: r2e.watched refused (the audit hook could not run)"
    assert got["outcomes"] == [could_not, "allowed", could_not]
    assert got["calls"] == ["raise", "ok", "after"]  # "after" was decided: the thread is not left busy


def test_no_collection_starts_while_decide_runs_whoever_enables_the_collector(built):
    got = _run(built, """
        import gc
        ran = []
        class Cycle:
            def __init__(self):
                self.me = self
            def __del__(self):
                ran.append(inside[0])
        inside = [False]
        def decide(event, args, frame):
            inside[0] = True
            gc.enable()
            gc.set_threshold(1)
            for _ in range(2000):
                Cycle()
            forced = gc.collect()
            inside[0] = False
            ran.append(("forced", forced))
            return None
        k.audit_hook(decide, ("r2e.watched",), ())
        sys.audit("r2e.watched")
        after = gc.collect()
        print(json.dumps({"inside": sum(1 for r in ran if r is True), "forced": [r for r in ran if type(r) is list or type(r) is tuple],
                          "after": after, "outside": sum(1 for r in ran if r is False)}))
    """)
    assert got["inside"] == 0 and got["forced"] == [["forced", 0]]
    assert got["after"] >= 2000 and got["outside"] == 2000


def test_it_installs_once(built):
    got = _run(built, """
        k.audit_hook(lambda e, a, f: None, ("r2e.watched",), ())
        try:
            k.audit_hook(lambda e, a, f: None, ("r2e.watched",), ())
            second = "installed twice"
        except RuntimeError as exc:
            second = str(exc)
        print(json.dumps({"second": second}))
    """)
    assert got["second"] == "the audit hook is installed already"


def test_frame_argument_reads_a_frames_slots_as_they_are_now_and_answers_only_the_hook(built):
    got = _run(built, """
        seen = []
        def decide(event, args, frame):
            now = k.frame_argument(frame, 0)
            seen.append([type(now).__name__, now if isinstance(now, str) else None,
                         k.frame_argument(frame, 1), k.frame_argument(frame, 9), k.frame_argument(frame, -1)])
            return None
        k.audit_hook(decide, ("r2e.watched",), ())
        def first(data, other=None):
            sys.audit("r2e.watched")
            data = "rebound"
            sys.audit("r2e.watched")
        first(b"x")
        first(memoryview(b"xyz")[1:])
        try:
            k.frame_argument(sys._getframe(), 0)
            outside = "answered"
        except PermissionError as exc:
            outside = str(exc)
        print(json.dumps({"seen": seen, "outside": outside}))
    """)
    # slot 1 holds None; 9 and -1 are out of range
    assert got["seen"][0] == ["bytes", None, None, None, None] and got["seen"][1] == ["str", "rebound", None, None, None]
    assert got["seen"][2][0] == "memoryview"
    # A run's test reaches the module (sys.settrace.__self__): outside decide it answers nothing.
    assert "answers only the hook" in got["outside"]


def test_after_lock_only_the_calls_it_names_are_taken(built, tmp_path):
    # Red team round 18: a run's test reaches the module, and map_library would dlopen a file it wrote (mapped
    # and relocated, no audit event). The verifier locks it once the session is set up, and the lock is an
    # allowlist: every function of the module it does not name is refused, whatever its arguments (each is
    # called here with none, then with one, then with plausible ones), a function added later included.
    lib = tmp_path / "written.so"
    lib.write_bytes(b"not an ELF")
    got = _run(built, f"""
        k.audit_hook(lambda e, a, f: None, ("r2e.watched",), ())
        early = k.map_library  # a function object taken before the lock is refused as well
        k.lock()
        k.lock()
        plausible = {{"map_library": ({str(lib)!r}, 2), "create_ruleset": (None, 1), "add_rule": (0, 1, b"x"),
                     "restrict_self": (0,), "seccomp": (b"12345678",), "set_pdeathsig": (9,), "set_dumpable": (True,),
                     "audit_hook": (lambda e, a, f: None, ("x",), ()), "record_lines": ({{}}, set()),
                     "harden_streams": (None,) * 6, "harden_type": (bytearray, {{}}, 1),
                     "hold_items": (list, list), "hold_streams": (k, []), "refuse_instances": (dict,)}}
        kept = {{"arm", "settrace", "trace_here", "frame_argument", "lock"}}
        refused = {{}}
        for name in dir(k):
            call = getattr(k, name)
            if name.startswith("_") or not callable(call) or name in kept:
                continue
            why = set()
            for args in ((), (None,), plausible.get(name, ())):
                try:
                    call(*args)
                    why.add("taken")
                except PermissionError as exc:
                    why.add(str(exc))
                except TypeError as exc:  # CPython counted the arguments before calling
                    pass
            refused[name] = sorted(why)
        try:
            early({str(lib)!r}, 2)
            refused["early map_library"] = ["taken"]
        except PermissionError as exc:
            refused["early map_library"] = [str(exc)]
        k.arm()  # these only restrict, or only start the verifier's recorder: still taken
        k.settrace(None)
        k.trace_here()
        print(json.dumps({{"refused": refused}}))
    """)
    assert set(got["refused"]) == {"map_library", "create_ruleset", "add_rule", "restrict_self", "no_new_privs",
                                   "seccomp", "set_pdeathsig", "set_dumpable", "audit_hook", "record_lines",
                                   "harden_array", "harden_streams", "harden_type", "hold_items", "hold_streams",
                                   "refuse_instances", "guard_imports", "one_time_heap",
                                   "early map_library"}
    for name, why in got["refused"].items():
        assert why == ["repo2rlenv verifier: _r2e_kernel refuses every set-up call once the run's set-up is over"], name


def test_no_tracer_sees_decides_frames(built):
    # CPython turns tracing off around the audit hooks written in Python, not around C ones: a test's
    # tracer (threading's bootstrap installs one) would be handed decide's frames, and their closure.
    got = _run(built, """
        seen = []
        def tracer(frame, event, arg):
            seen.append(frame.f_code.co_name)
            return tracer
        def decide(event, args, frame):
            def inner():
                return None
            inner()
            return None
        k.audit_hook(decide, ("r2e.watched",), ())
        def raiser():
            sys.audit("r2e.watched")
        sys.settrace(tracer)
        raiser()
        sys.settrace(None)
        print(json.dumps({"seen": sorted(set(seen))}))
    """)
    assert got["seen"] == ["raiser"]


def test_what_decide_took_is_released_after_the_hook_lets_go(built):
    # A weakref callback run by that release is any code's: its own event is decided, not waved as the
    # hook's (red team round 12: another thread made the checks' reference to a code object the last one).
    got = _run(built, """
        import weakref
        calls, refs = [], []
        class Obj:
            pass
        def decide(event, args, frame):
            calls.append(args[0])
            if args[0] == "top":
                held = Obj()
                refs.append(weakref.ref(held, lambda ref: sys.audit("r2e.watched", "from the callback")))
                return None, [held]
            return None
        k.audit_hook(decide, ("r2e.watched",), ())
        sys.audit("r2e.watched", "top")
        print(json.dumps({"calls": calls}))
    """)
    assert got["calls"] == ["top", "from the callback"]


def test_the_hook_api_is_the_one_the_verifier_speaks(built):
    from repo2rlenv.verifiers.test_synthesis import verifier_guard

    got = _run(built, """
        print(json.dumps({"api": k.HOOK_API}))
    """)
    assert got["api"] == verifier_guard.HOOK_API


RAISED_DURING_A_COLLECTION = """
    import gc, threading
    calls = []
    def decide(event, args, frame):
        calls.append(args[0])
        return None
    k.audit_hook(decide, ("r2e.watched",), ())
    if ARM:
        k.arm()
    main, entered, release = threading.current_thread(), threading.Event(), threading.Event()
    def callback(phase, info):
        if phase == "stop" and threading.current_thread() is not main:
            entered.set()
            release.wait(5)  # the other thread's collection stays paused past the hook's 10 ms
    gc.callbacks.append(callback)
    other = threading.Thread(target=gc.collect)
    other.start()
    entered.wait(5)
    try:
        sys.audit("r2e.watched", "during")
        during = "allowed"
    except PermissionError as exc:
        during = str(exc)
    release.set()
    other.join()
    gc.callbacks.remove(callback)
    sys.audit("r2e.watched", "after")
    print(json.dumps({"during": during, "calls": calls}))
"""


def test_once_armed_no_event_is_decided_while_a_collection_runs(built):
    # decide would run with the collector unheld: that collection could end and this thread's next
    # allocation start one whose callbacks run the test's code above decide (red team round 13).
    got = _run(built, "ARM = True\n" + textwrap.dedent(RAISED_DURING_A_COLLECTION))
    assert got["during"].startswith("repo2rlenv verifier: r2e.watched refused: raised while a garbage collection runs")
    assert got["calls"] == ["after"]
    before = _run(built, "ARM = False\n" + textwrap.dedent(RAISED_DURING_A_COLLECTION))
    assert before == {"during": "allowed", "calls": ["during", "after"]}  # before the submission runs


# A decide that refuses every tracer: what gets through is only what _r2e_kernel itself set. Threads start the
# recorder through the verifier's own wrapper of threading's bootstrap (verifier_guard._traced_bootstrap).
RECORDER = f"""
    import doctest, threading
    sys.path.insert(0, {str(Path(verifier_guard.__file__).parent)!r})
    from verifier_guard import _traced_bootstrap
    def decide(event, args, frame):
        return PermissionError("tracer refused") if event in ("sys.settrace", "sys.setprofile") else None
    k.audit_hook(decide, ("sys.settrace", "sys.setprofile"), ())
    builtin_settrace = sys.settrace
    sys.settrace = k.settrace
    def target(x):
        if x < 0:
            return "negative"
        return "other"
    FIRST = target.__code__.co_firstlineno
    own, lines = {{id(target.__code__): target.__code__}}, set()
    k.record_lines(own, lines)
    threading.Thread._bootstrap_inner = _traced_bootstrap(threading.Thread._bootstrap_inner, k.trace_here)
"""


def test_the_line_recorder_keeps_the_lines_the_target_ran(built):
    got = _run(built, textwrap.dedent(RECORDER) + textwrap.dedent("""
        target(1)
        seen = sorted(l - FIRST for l in lines)
        try:
            k.record_lines({}, set())
            again = "started again"
        except RuntimeError as exc:
            again = str(exc)
        t = threading.Thread(target=target, args=(-1,))  # a thread the test starts is recorded too
        t.start(); t.join()
        print(json.dumps({"seen": seen, "with_thread": sorted(l - FIRST for l in lines), "again": again,
                          "gettrace": sys.gettrace()}))
    """))
    assert got["seen"] == [1, 3]  # the `if` and the last return: not the `def` line, not the other branch
    assert got["with_thread"] == [1, 2, 3]
    assert got["again"] == "the line recorder is started already"
    assert got["gettrace"] is None  # nothing a test could hand back to sys.settrace


def test_no_frame_of_the_target_can_be_made_to_jump(built):
    # Red team round 14: a class as the target frame's f_trace (its __new__ moved f_lineno, its __init__ was
    # the Python recorder). The C recorder never calls f_trace, and f_lineno cannot be set outside a
    # Python tracer's 'line' event, which never happens here.
    got = _run(built, textwrap.dedent(RECORDER) + textwrap.dedent("""
        jumps = []
        class Probe(float):
            def __lt__(self, other):
                frame = sys._getframe(1)
                class Jump:
                    def __new__(cls, fr, event, arg):
                        jumps.append(event)
                        fr.f_lineno = fr.f_lineno + 1
                        return object.__new__(cls)
                frame.f_trace = Jump
                try:
                    frame.f_lineno = frame.f_lineno + 1
                    jumps.append("jumped")
                except ValueError as exc:
                    jumps.append("refused")
                return float(self) < other
        result = target(Probe(5))
        print(json.dumps({"result": result, "jumps": jumps, "seen": sorted(l - FIRST for l in lines)}))
    """))
    assert got == {"result": "other", "jumps": ["refused"], "seen": [1, 3]}


def test_sys_settrace_installs_nothing_but_the_recorder(built):
    # Any trace function set through sys.settrace runs under CPython's trampoline, which hands 'line' events to
    # each frame's f_trace (red team round 15: a trace function of ours that replaced itself with the
    # recorder still left that window; round 16: a tracer of the test's let through by a rule on the calling
    # frame, doctest's runner): only _r2e_kernel's own sys.settrace events pass. sys.settrace(None) switches
    # tracing off (doctest's runner does, and puts back None), any tracer is refused.
    got = _run(built, textwrap.dedent(RECORDER) + textwrap.dedent("""
        called = []
        def mine(frame, event, arg):
            called.append(event)
            return mine
        threading.settrace(mine)
        lines.clear()
        t = threading.Thread(target=target, args=(-1,))
        t.start(); t.join()
        in_thread = sorted(lines)
        threading.settrace(None)
        direct = []
        for settrace, tracer in ((sys.settrace, mine), (sys.settrace, k.trace_here), (builtin_settrace, mine),
                                 (builtin_settrace, None), (sys.settrace, None)):
            try:
                settrace(tracer)
                direct.append("set")
            except PermissionError as exc:
                direct.append(str(exc))
        k.trace_here()
        parser = doctest.DocTestParser()
        test = parser.get_doctest(">>> 1 + 1\\n2\\n", {}, "example", "example.py", 0)
        result = doctest.DocTestRunner().run(test, out=lambda text: None)
        lines.clear()
        target(-1)  # doctest switched tracing off in this thread: the recorder is off here
        after_doctest = sorted(lines)
        k.trace_here()
        target(-1)
        print(json.dumps({"called": called, "in_thread": in_thread, "direct": direct, "doctest": list(result),
                          "after_doctest": after_doctest, "restarted": sorted(l - FIRST for l in lines)}))
    """))
    assert got["called"] == []
    assert got["in_thread"] == []  # its bootstrap's settrace was refused: the thread ended before its target
    refused = "repo2rlenv verifier: sys.settrace (tracing or profiling) refused"
    assert got["direct"] == [refused, refused, "tracer refused", "tracer refused", "set"]
    assert got["doctest"] == [0, 1]
    assert got["after_doctest"] == []
    assert got["restarted"] == [1, 2]


def test_array_takes_only_items_whose_conversion_runs_no_code_of_the_tests(built, tmp_path):
    # Red team round 19: array's item assignment converts the value (its __index__) after measuring the
    # buffer; the test's __index__ shrinks the array and the byte lands past its end (CPython gh-142555),
    # which made a bytearray read any address. append, insert, extend, fromlist and tofile have the same shape.
    got = _run(built, f"""
        import array, importlib.machinery, importlib.util, _imp
        k.harden_array(array.array)
        k.guard_imports(_imp)

        class Shrink:
            def __index__(self):
                del a[1:]
                return 1
            __float__ = lambda self: float(self.__index__())

        class Sub(array.array):
            pass

        def shrinking():
            yield 1
            yield Shrink()

        class Writer:
            def __init__(self):
                self.seen = []
            def write(self, data):
                del a[1:]
                self.seen.append(bytes(data))

        refused = {{}}
        for name, call in {{
            "item": lambda: a.__setitem__(50, Shrink()),
            "item through the type": lambda: array.array.__setitem__(a, 50, Shrink()),
            "item of a subclass": lambda: Sub("b", bytes(10)).__setitem__(5, Shrink()),
            "float item": lambda: array.array("d", [0.0] * 10).__setitem__(5, Shrink()),
            "append": lambda: a.append(Shrink()),
            "insert": lambda: a.insert(0, Shrink()),
            "extend": lambda: a.extend(shrinking()),
            "fromlist": lambda: a.fromlist([1, Shrink()]),
            "create_builtin": lambda: _imp.create_builtin(importlib.machinery.ModuleSpec("array", None)),
            "create_dynamic": lambda: _imp.create_dynamic(importlib.machinery.ModuleSpec("x.array", None, origin="/x")),
            "module_from_spec": lambda: importlib.util.module_from_spec(importlib.util.find_spec("array")),
        }}.items():
            a = array.array("b", bytes(100))
            try:
                call()
                refused[name] = "taken"
            except (TypeError, ImportError) as exc:
                refused[name] = type(exc).__name__ + ": " + str(exc)[:60]
        a = array.array("b", bytes(100))
        writer = Writer()
        a.tofile(writer)  # one write of the bytes copied first: nothing read past the shrunk buffer
        b = array.array("i", [1])
        b[0] = 5
        b.append(True)
        b.insert(0, 7)
        b.extend(x for x in (8, 9))
        b.extend(array.array("i", [10]))
        b.fromlist([11])
        d = array.array("d")
        d.append(1)
        d.append(2.5)
        u = array.array("u", "ab")
        u[0] = "z"
        print(json.dumps({{"refused": refused, "written": [len(s) for s in writer.seen], "left": len(a),
                          "b": b.tolist(), "d": d.tolist(), "u": u.tounicode(), "sub": Sub("b", [1, 2]).tolist()}}))
    """)
    assert all(why.startswith(("TypeError: repo2rlenv verifier:", "ImportError: repo2rlenv verifier:"))
               for why in got["refused"].values()), got["refused"]
    assert got["written"] == [100] and got["left"] == 1
    assert got["b"] == [7, 5, 1, 8, 9, 10, 11] and got["d"] == [1.0, 2.5] and got["u"] == "zb"
    assert got["sub"] == [1, 2]


def test_streams_given_to_buffered_io_and_the_unpickler_never_see_a_view_without_an_owner(built, tmp_path):
    # Red team round 20: a buffered reader hands its raw stream's readinto a memoryview of its own buffer with
    # no owner (CPython gh-60198), and the unpickler one of a new bytes object; a view kept past the reader
    # wrote into a freed block. With harden_streams they only see views of bytearrays the copying stream owns.
    got = _run(built, f"""
        import _imp, _io, _pickle, importlib.machinery, io, itertools, pickle
        k.harden_streams(_io.FileIO, _io.BufferedReader, _io.BufferedWriter, _io.BufferedRandom, _pickle,
                         itertools.pairwise)
        k.guard_imports(_imp)
        kept, written = [], []

        class Raw(io.RawIOBase):
            def __init__(self, data=b""):
                self.data = data
            def readable(self):
                return True
            def writable(self):
                return True
            def readinto(self, view):
                kept.append(view)
                n = min(len(view), len(self.data))
                view[:n], self.data = self.data[:n], self.data[n:]
                return n
            def write(self, data):
                written.append(type(data).__name__)
                return len(data)

        class File(io.BytesIO):
            def readinto(self, view):
                kept.append(view)
                return super().readinto(view)

        reader = io.BufferedReader(Raw(b"hello world"), buffer_size=56)
        text = reader.read(5) + reader.read()
        try:
            reader.__init__(Raw(b"again"))
            again = "taken"
        except RuntimeError as exc:
            again = str(exc)
        out = io.BufferedWriter(Raw())
        out.write(b"abc")
        out.flush()
        payload = b"\\x80\\x05\\x96" + (56).to_bytes(8, "little") + bytes(56) + b"."
        loaded = [pickle.load(File(payload)), pickle.Unpickler(File(payload)).load(), _pickle.load(File(payload))]
        path = {str(tmp_path / "f.bin")!r}
        with open(path, "wb") as fh:
            fh.write(b"xyz")
        with open(path, "rb") as fh:
            disk = fh.read()
        pw = None
        def entering():
            yield 1
            next(pw)
            yield 2
        pw = itertools.pairwise(entering())
        try:
            list(pw)
            reentered = "taken"
        except RuntimeError as exc:
            reentered = str(exc)
        refused = {{}}
        for name in ("itertools", "_io"):
            try:
                _imp.create_builtin(importlib.machinery.ModuleSpec(name, None))
                refused[name] = "taken"
            except ImportError as exc:
                refused[name] = "ImportError"
        owner = lambda v: type(v.obj if isinstance(v, memoryview) else v).__name__  # unhardened: a view of None
        print(json.dumps({{"owners": sorted({{owner(v) for v in kept}}), "text": text.decode(),
                          "again": again, "written": written, "loaded": [len(x) for x in loaded],
                          "disk": disk.decode(), "reentered": reentered, "pairs": list(itertools.pairwise("abc")),
                          "refused": refused}}))
    """)
    assert got["owners"] == ["bytearray"]  # never None: no view without an owner reached the test's code
    assert got["text"] == "hello world" and got["written"] == ["bytes"] and got["loaded"] == [56, 56, 56]
    assert got["again"].startswith("repo2rlenv verifier: a _io.BufferedReader is initialised once")
    assert got["disk"] == "xyz" and got["pairs"] == [["a", "b"], ["b", "c"]]
    assert got["reentered"] == "repo2rlenv verifier: itertools.pairwise re-entered"
    assert got["refused"] == {"itertools": "ImportError", "_io": "ImportError"}


def test_bytearray_mmap_and_sqlite3_use_their_arguments_only_once_converted(built):
    # Round 20's open rows and round 21: bytearray's find family, `in`, join and `%` read their buffer after
    # the test's conversion (a start's __index__, a list subclass's __iter__, an argument's __bytes__) emptied
    # it: a read of the freed block (this interpreter has that bug: unhardened, `count` finds the spray in it);
    # mmap's indexing and methods use a mapping the test's __index__ closed (Debian's 3.11.2); sqlite3 crashes
    # when a user function closes the connection or cursor stepping it (every interpreter). The verifier's
    # own table (verifier_kernel._argument_rules) is what is applied.
    got = _run(built, """
        import _imp, array, importlib.machinery, mmap, sqlite3
        from repo2rlenv.verifiers.test_synthesis import verifier_kernel
        Early = type("Early", (bytearray,), {})  # made before the hardening, as a library's class would be
        Earlier = type("Earlier", (Early,), {})
        for name, kind, methods, slots in verifier_kernel._argument_rules():
            k.harden_type(kind, methods, slots)
        k.guard_imports(_imp)
        keep, out = [], {}

        def emptying(ba, value=0):
            class Emptying:
                def __index__(self):
                    ba.clear()
                    keep.extend(bytearray(b"Z" * 4095) for _ in range(4))
                    return value
                def __iter__(self):
                    self.__index__()
                    return iter([b"x", b"y"])
                def __bytes__(self):
                    self.__index__()
                    return b"q"
            return Emptying()

        def probe(name, call):
            ba = bytearray(b"A" * 4096)
            try:
                out[name] = call(ba)
            except Exception as exc:
                out[name] = type(exc).__name__
            if isinstance(out[name], (bytes, bytearray)):
                out[name] = out[name].count(b"Z")  # bytes of the freed block copied out

        probe("count", lambda ba: ba.count(ord("Z"), emptying(ba)))
        probe("rfind", lambda ba: ba.rfind(ord("Z"), emptying(ba)))
        probe("in", lambda ba: emptying(ba, ord("Z")) in ba)
        probe("__contains__", lambda ba: bytearray.__contains__(ba, emptying(ba, ord("Z"))))
        probe("join", lambda ba: ba.join(type("L", (list,), {"__iter__": lambda s: emptying(ba).__iter__()})()))
        probe("%", lambda ba: (ba[:] + b"%s" * 2048, ba.clear())[0] % ((emptying(ba),) * 2048))
        for kind in (Early, Earlier):
            early = kind(b"A" * 4096)
            out[kind.__name__ + " in"] = emptying(early, ord("Z")) in early
        out["plain"] = [bytearray(b"a,b").join([b"1", memoryview(b"2")]).decode(), bytearray(b"abc").find(b"c", 1),
                        bytearray(b"abc").startswith((b"x", b"a")), bytearray(b"%d-%s") % (5, b"x") == b"5-x",
                        bytearray.find(bytearray(b"abc"), 98), type("B", (bytearray,), {})(b"hey").find(b"y")]
        view = memoryview(bytearray(range(8)))
        view[0] = 9
        doubles = memoryview(array.array("d", [0.0, 0.0, 0.0]))
        doubles[0:2] = array.array("d", [1.5, 2.5])  # a typed buffer keeps its format
        out["memoryview plain"] = [view[0], view[1:3].tolist(), view.cast("B", [2, 4]).tolist()[1], view[-1],
                                   doubles.tolist()]

        for name, call in {"index": lambda m, i: m[i], "assignment": lambda m, i: m.__setitem__(i, 65),
                           "slice": lambda m, i: m.__setitem__(slice(0, i), b"hello"),
                           "find": lambda m, i: m.find(b"x", i), "move": lambda m, i: m.move(i, 0, 10)}.items():
            m = mmap.mmap(-1, 1 << 20)
            closing = type("Closing", (), {"__index__": lambda self: (m.close(), 5)[1]})()
            try:
                out["mmap " + name] = call(m, closing)
            except ValueError as exc:
                out["mmap " + name] = str(exc)
        m = mmap.mmap(-1, 64)
        m[0:5] = b"hello"
        m[5] = 33
        out["mmap plain"] = [m[:6].decode(), m.find(b"l"), m.read(3).decode()]

        con = sqlite3.connect(":memory:")
        con.execute("create table t(x)")
        con.executemany("insert into t values (?)", [(i,) for i in range(5)])
        cur = con.cursor()
        for name, inside in {"close": con.close, "cursor close": cur.close,
                             "replace the function": lambda: con.create_function("f", 1, abs)}.items():
            seen = []
            def f(x, inside=inside, seen=seen):
                try:
                    inside()
                except RuntimeError as exc:
                    seen.append(str(exc))
                return x
            con.create_function("f", 1, f)
            out["sqlite " + name] = [cur.execute("select f(x) from t").fetchall(), seen[:1]]
        rows = con.execute("select x from t")
        first = next(rows)
        cur.close()  # between steps nothing runs: taken
        out["sqlite plain"] = [first, con.execute("select sum(x) from t").fetchone()]
        con.close()
        refused = {}
        for name in ("mmap", "_sqlite3"):
            try:
                _imp.create_dynamic(importlib.machinery.ModuleSpec(name, None, origin="/nowhere.so"))
                refused[name] = "taken"
            except ImportError as exc:
                refused[name] = str(exc)[:40]
        out["created again"] = refused
        print(json.dumps(out))
    """)
    # Converted first: the buffer was emptied before the method measured it, so nothing of the freed block.
    assert [got[n] for n in ("count", "rfind", "in", "__contains__", "join", "%")] == [0, -1, False, False, 0, 0]
    assert [got["Early in"], got["Earlier in"]] == [False, False]  # subclasses made before: their slots too
    assert got["plain"] == ["1a,b2", 2, True, True, 1, 2]
    assert got["memoryview plain"] == [9, [1, 2], [4, 5, 6, 7], 7, [1.5, 2.5, 0.0]]
    assert {got["mmap " + n] for n in ("index", "assignment", "slice", "find", "move")} == {"mmap closed or invalid"}
    assert got["mmap plain"] == ["hello!", 2, "hel"]
    refusal = ("repo2rlenv verifier: closing or changing a database connection, or a pickler's memo, while a "
               "statement or a pickle runs (from a callback, or another thread) is refused in a graded run")
    for name in ("close", "cursor close", "replace the function"):
        assert got["sqlite " + name] == [[[i] for i in range(5)], [refusal]], name
    assert got["sqlite plain"] == [[0], [10]]
    assert got["created again"] == {n: "repo2rlenv verifier: creating the module" for n in ("mmap", "_sqlite3")}


def test_picklers_structs_and_parsers_are_not_used_again_from_inside_their_own_calls(built):
    # Red team round 21: an unpickler's load re-entered from its own persistent_load (CPython gh-143638: the
    # inner result freed while the outer holds it), its memo replaced mid-load, a Struct initialised again from
    # a value's __index__ inside its pack_into (gh-143379: its codes freed while read), expat's Parse from a
    # handler: each read any address on the images' interpreters. Nested use of *other* objects stays taken,
    # as do subclasses (a restricted unpickler, a buffered reader of one's own).
    got = _run(built, """
        import _imp, _io, _pickle, importlib.machinery, io, itertools, pickle, pyexpat, struct
        from repo2rlenv.verifiers.test_synthesis import verifier_kernel
        k.harden_streams(_io.FileIO, _io.BufferedReader, _io.BufferedWriter, _io.BufferedRandom, _pickle,
                         itertools.pairwise)
        for name, kind, methods, slots in verifier_kernel._argument_rules():
            k.harden_type(kind, methods, slots)
        k.guard_imports(_imp)
        out = {}

        def attempt(name, call):
            try:
                out[name] = call()
            except RuntimeError as exc:
                out[name] = str(exc)

        class Again(pickle.Unpickler):  # a subclass, made after the hardening: initialised once, like its base
            def persistent_load(self, pid):
                attempt("load again", self.load)
                attempt("memo replaced", lambda: setattr(self, "memo", {}))
                attempt("memo cleared", self.memo.clear)
                attempt("another unpickler", lambda: pickle.loads(pickle.dumps([pid])))
                return pid
        data = pickle.dumps([1, 2])
        class P(pickle.Pickler):
            def persistent_id(self, obj):
                return "x" if obj == 2 else None
        buf = io.BytesIO()
        P(buf).dump([1, 2])
        out["loaded"] = Again(io.BytesIO(buf.getvalue())).load()

        s = struct.Struct("8b")
        class Reinit:
            def __index__(self):
                attempt("struct init", lambda: s.__init__("b"))
                attempt("other struct", lambda: struct.Struct("2b").pack(1, 2).hex())
                return 1
        target = bytearray(8)
        s.pack_into(target, 0, Reinit(), 2, 3, 4, 5, 6, 7, 8)
        out["packed"] = list(target)
        s.__init__("2b")  # between calls: taken
        out["reinit"] = s.format

        parser = pyexpat.ParserCreate()
        def start(tag, attrs):
            attempt("parse again", lambda: parser.Parse(b"<b/>", True))
            out.setdefault("tags", []).append(tag)
        parser.StartElementHandler = start
        parser.Parse(b"<a/>", True)

        class Raw(io.RawIOBase):
            def readable(self):
                return True
            def readinto(self, view):
                view[:2] = b"hi"
                return 2
        class Reader(io.BufferedReader):
            pass
        out["subclass reader"] = Reader(Raw(), buffer_size=8).read(2).decode()
        refused = {}
        for name in ("_struct", "pyexpat", "_elementtree"):
            try:
                _imp.create_builtin(importlib.machinery.ModuleSpec(name, None))
                refused[name] = "taken"
            except ImportError:
                refused[name] = "ImportError"
        out["created again"] = refused
        print(json.dumps(out))
    """)
    again = "repo2rlenv verifier: a Again is not used again from inside one of its own calls in a graded run"
    memo = ("repo2rlenv verifier: closing or changing a database connection, or a pickler's memo, while a statement "
            "or a pickle runs (from a callback, or another thread) is refused in a graded run")
    assert got["load again"] == again
    assert got["memo replaced"] == memo and got["memo cleared"] == memo
    assert got["another unpickler"] == ["x"] and got["loaded"] == [1, "x"]
    assert got["struct init"] == "repo2rlenv verifier: a _struct.Struct is not used again from inside one of its own calls in a graded run"
    assert got["other struct"] == "0102" and got["packed"] == [1, 2, 3, 4, 5, 6, 7, 8] and got["reinit"] == "2b"
    assert got["parse again"].startswith("repo2rlenv verifier: a pyexpat.xmlparser is not used again")
    assert got["tags"] == ["a"]
    assert got["subclass reader"] == "hi"
    assert got["created again"] == {"_struct": "ImportError", "pyexpat": "ImportError", "_elementtree": "ImportError"}


def test_lists_and_deques_hold_the_items_they_compare(built):
    # Red team round 22: list's comparison compares the first items that differ again while holding neither
    # (CPython gh-120298, every 3.11): a __lt__ that empties the other list freed the item compared, and a
    # fake object took its place (any address read). deque.index likewise (gh-115243, Debian's 3.11.2).
    # Held: the item dies after the comparison it is in, never inside it; every result is unchanged.
    got = _run(built, """
        import collections, math
        cases = [([1, 2], [1, 3]), ([1, 2], [1, 2, 0]), ([], []), ([math.nan], [math.nan]), ([[1, [2]]], [[1, [3]]]),
                 (["a", 1], ["a", 1.0]), ([1, "x"], [1, 2]), ([None], [None]), ([2, 1], [1, 2])]
        ops = ("__lt__", "__le__", "__eq__", "__ne__", "__gt__", "__ge__")

        def table():
            out = []
            for a, b in cases:
                for op in ops:
                    for call in (lambda: getattr(a, op)(b), lambda: getattr(list, op)(a, b)):
                        try:
                            out.append(repr(call()))
                        except TypeError as exc:
                            out.append("TypeError")
                out.append([a < b, a == b, a >= b, type("L", (list,), {})(a) <= b] if "x" not in a else "skip")
            return out

        before = table()
        Early = type("Early", (list,), {})  # a subclass made before: its copied slot is replaced too
        k.hold_items(list, collections.deque)
        events = []

        class Right:
            def __del__(self):
                events.append("freed")
            def __gt__(self, other):
                events.append("compared")
                return False

        class Left:
            def __eq__(self, other):
                return False
            def __lt__(self, other):
                del other
                self.right.clear()
                return NotImplemented

        out = {"same results": table() == before}
        for name, make in {"list": list, "early": Early}.items():
            events.clear()
            left, right = Left(), [Right()]
            left.right = right
            out[name] = [make([left]) < right, list(events)]

        class Clearing:
            def __init__(self, d):
                self.d = d
            def __eq__(self, other):
                self.d.clear()
                return False
        d = collections.deque()
        d.extend([Clearing(d), 2])
        try:
            d.index(2)
        except RuntimeError as exc:
            out["deque cleared"] = str(exc)
        d = collections.deque([1, 2, 3, 2])
        out["deque plain"] = [d.index(2), d.index(2, -2), d.index(3, 0, 100)]
        try:
            d.index(9)
        except ValueError as exc:
            out["deque missing"] = str(exc)
        print(json.dumps(out))
    """)
    assert got["same results"] is True
    assert got["list"] == got["early"] == [False, ["compared", "freed"]]
    assert got["deque cleared"] == "deque mutated during iteration"
    assert got["deque plain"] == [1, 3, 2] and got["deque missing"] == "9 is not in deque"


def test_a_lists_slice_assignment_reads_the_value_out_before_it_measures(built):
    # Red team round 25: 3.11's extended-slice assignment measured the slice, then ran the value's __iter__,
    # which emptied and regrew the list: the writes went past the new item array (any address read, on the
    # one-time heap). The value is read out first, as 3.12 does; every other assignment is unchanged.
    got = _run(built, """
        import collections
        def assignments(make):
            out = []
            for key, value in ((slice(None, None, 2), iter("abcde")), (slice(1, 3), (c for c in "xy")),
                               (slice(None, None, 3), [0, 0, 0, 0]), (slice(0, 1), "pq"), (3, "z"),
                               (slice(None, None, 2), 5), (slice(None, None, 2), "ab")):
                a = make(range(10))
                try:
                    a[key] = value
                    out.append(list(a))
                except (TypeError, ValueError) as exc:
                    out.append(f"{type(exc).__name__}: {exc}")
                b = make(range(10))
                try:
                    list.__setitem__(b, key, value if not hasattr(value, "__next__") else iter(a))
                    out.append(len(b))
                except (TypeError, ValueError) as exc:
                    out.append(type(exc).__name__)
            return out

        Early = type("Early", (list,), {})
        before = assignments(list), assignments(Early)
        k.hold_items(list, collections.deque)
        out = {"same results": (assignments(list), assignments(Early)) == before}

        for name, make in {"list": list, "early": Early, "later": type("Later", (list,), {})}.items():
            target = make([None] * 20)

            class Regrowing:
                def __iter__(self):
                    target.clear()
                    target.extend(range(8))
                    return iter(["X"])
            try:
                target[15:16:2] = Regrowing()
                out[name] = ["assigned", list(target)]
            except ValueError as exc:
                out[name] = [str(exc), list(target)]
        print(json.dumps(out))
    """)
    assert got["same results"] is True
    refused = ["attempt to assign sequence of size 1 to extended slice of size 0", list(range(8))]
    assert got["list"] == got["early"] == got["later"] == refused, got


def test_print_and_input_hold_the_streams_they_use(built):
    # Round 22's survey: print and input read sys.stdout (and stdin, stderr) without holding them (CPython
    # gh-130163, 3.11): an argument's __str__ replacing sys.stdout freed the file print then wrote to.
    got = _run(built, """
        import builtins, io, warnings
        from repo2rlenv.verifiers.test_synthesis import verifier_kernel
        taken_before = warnings.warn  # a module's name for it: replaced as well
        verifier_kernel._hold_streams(k, builtins)
        freed = []

        class Out(io.StringIO):
            def __del__(self):
                freed.append(self.getvalue())

        class Swap:
            def __str__(self):
                sys.stdout = io.StringIO()
                return "x"

        real = sys.stdout
        sys.stdout = Out()
        print(Swap(), Swap())
        sys.stdout = real
        into = io.StringIO()
        print("a", 1, sep="-", end="!", file=into)
        sys.stdin = io.StringIO("typed\\n")
        sys.stdout = io.StringIO()
        typed = input("prompt? ")
        sys.stdout, sys.stdin = real, sys.__stdin__

        class Shown:  # round 23: sys.displayhook writes its newline to the stream its repr replaced
            def __repr__(self):
                sys.stdout = io.StringIO()
                return "shown"

        sys.stdout = Out()
        sys.displayhook(Shown())
        sys.stdout = real
        replaced = [sys.displayhook is sys.__displayhook__, warnings.warn is taken_before,
                    type(warnings.warn).__name__, warnings.warn.__name__, hasattr(warnings.warn, "original")]
        print(json.dumps({"freed": freed, "into": into.getvalue(), "typed": typed,
                          "names": [print.__name__, input.__name__], "replaced": replaced}))
    """)
    assert got == {"freed": ["x x\n", "shown\n"], "into": "a-1!", "typed": "typed", "names": ["print", "input"],
                   "replaced": [True, True, "HeldCall", "warn", False]}


def test_the_c_ordered_dict_is_replaced_by_the_python_one_and_makes_no_instance(built):
    # Red team round 23: C OrderedDict's move_to_end (and its del, pop, popitem, copy, ==) use an index and a
    # node pointer computed before a key lookup that runs the test's __eq__: a reader of any address.
    got = _run(built, """
        import _collections, collections, inspect, pickle
        from repo2rlenv.verifiers.test_synthesis import verifier_kernel
        kinds = {"C": _collections.OrderedDict}  # not a module-level name: those are all replaced
        Early = type("Early", (kinds["C"],), {})  # a subclass made before: refused too
        verifier_kernel._python_ordered_dict(k, _collections)
        C = kinds["C"]
        out = {"same name": [collections.OrderedDict is _collections.OrderedDict is inspect.OrderedDict,
                             collections.OrderedDict is not C, collections.OrderedDict.__module__]}
        for name, make in {"C": lambda: C(), "subclass": lambda: Early(a=1), "dict.__new__": lambda: dict.__new__(C),
                           "fromkeys": lambda: C.fromkeys([1]), "later subclass": lambda: type("L", (C,), {})()}.items():
            try:
                make()
                out[name] = "made"
            except (RuntimeError, TypeError) as exc:
                out[name] = type(exc).__name__
        od = collections.OrderedDict([("a", 1), ("b", 2)])
        od.move_to_end("a")
        od2 = pickle.loads(pickle.dumps(od))
        out["python"] = [list(od), od2 == od, type(od2) is collections.OrderedDict, repr(od)]
        print(json.dumps(out))
    """)
    assert got["same name"] == [True, True, "collections"]
    assert {n: got[n] for n in ("C", "subclass", "dict.__new__", "fromkeys", "later subclass")} == {
        "C": "RuntimeError", "subclass": "RuntimeError", "dict.__new__": "TypeError", "fromkeys": "RuntimeError",
        "later subclass": "RuntimeError"}
    assert got["python"] == [["b", "a"], True, True, "OrderedDict([('b', 2), ('a', 1)])"]

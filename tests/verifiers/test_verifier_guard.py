"""The audit-hook guard, installed for real in a fresh interpreter (a hook cannot be removed)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import coverage
import pytest

from repo2rlenv.verifiers.test_synthesis import verifier_guard

GUARD_DIR = Path(verifier_guard.__file__).parent
PROLOGUE = """
import json, os, sys
sys.path.insert(0, {guard_dir!r})
sys.path.insert(0, {pkg!r})
import ctypes, doctest, _pytest._code.code, verifier_guard  # as in a run: the zygote imported them
policy = {policy!r}
if policy.get("cover"):
    policy["cover"]["fd"] = os.open("covered.json", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
verifier_guard.install(policy)
if {seal!r}:
    verifier_guard.seal([["target", {target!r}]])
results = {{}}
def attempt(name, action):
    try:
        got = action()
        results[name] = "ok" if got is None or got is True else repr(got)
    except PermissionError as exc:
        results[name] = "refused" if "repo2rlenv verifier" in str(exc) else f"PermissionError: {{exc}}"
    except AttributeError as exc:
        results[name] = "refused (attribute)" if "repo2rlenv verifier" in str(exc) else "AttributeError"
    except Exception as exc:
        results[name] = type(exc).__name__
exec(compile(open({submission!r}).read(), {submission!r}, "exec"))
if policy.get("cover"):
    sys.audit("repo2rlenv.cover.dump")
open("results.json", "w").write(json.dumps(results))
print(json.dumps(results))
"""
TARGET = "def f(x):\n    y = x + 1\n    return y\n\ndef g():\n    yield 1\n"


def guarded(tmp_path: Path, body: str, *, seal: bool = True, target: str = TARGET,
            cover_key: str | None = None) -> dict[str, str]:
    """Run `body` as the 'submission' (the hook arms when its code executes), with `target.py` changed
    and, with `seal`, sealed as a run seals it at the session's start; with `cover_key`, the recorder
    writes covered.json."""
    pkg = tmp_path / "pkg"
    pkg.mkdir(exist_ok=True)
    (pkg / "target.py").write_text(target)
    cover = {"target": str(pkg / "target.py"), "key": cover_key} if cover_key else None
    (pkg / "other.py").write_text("def h():\n    return 2\n")
    submission = tmp_path / "test_sub.py"
    submission.write_text(textwrap.dedent(body))
    policy = {"submission": str(submission), "protected_names": ["target.py", "target.cpython-311.pyc"],
              "protected_paths": [str(pkg / "target.py")], "own_roots": [str(tmp_path)],
              "landlock": 7, "cover": cover}
    code = PROLOGUE.format(guard_dir=str(GUARD_DIR), pkg=str(pkg), policy=policy, submission=str(submission),
                           seal=seal, target=str(pkg / "target.py"))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_sealed_changed_code_runs_and_nothing_of_its_code_or_source_can_be_read(tmp_path):
    got = guarded(tmp_path, """
        import target, other, inspect, linecache, marshal, dis, gc, ctypes, shutil, types, io, importlib
        attempt("call", lambda: target.f(1) == 2)
        attempt("other module's code", lambda: other.h.__code__.co_code and True)
        attempt("__code__", lambda: target.f.__code__)
        attempt("getattr default", lambda: getattr(target.f, "__code__", None) is None)
        attempt("gi_code", lambda: target.g().gi_code)
        attempt("file is empty", lambda: open(target.__file__).read() == "")
        attempt("getsource", lambda: inspect.getsource(target.f))
        attempt("linecache", lambda: "".join(linecache.getlines(target.__file__)).strip() == "")
        attempt("get_code", lambda: target.__loader__.get_code("target"))  # compiling as the target, not importing
        attempt("reload keeps the module", lambda: importlib.reload(target).f(1) == 2)
        buf = io.StringIO()
        attempt("dis prints nothing", lambda: dis.dis(target.f, file=buf) or buf.getvalue() == "")
        attempt("marshal", lambda: marshal.loads(marshal.dumps(1)))
        attempt("code object", lambda: types.CodeType.replace(other.h.__code__, co_name="x"))
        attempt("gc", lambda: gc.get_referents(target.f))
        attempt("ctypes", lambda: ctypes.string_at(id(target.f), 8))
        attempt("other threads' frames", lambda: sys._current_frames())
        attempt("settrace", lambda: sys.settrace(lambda *a: None))
        attempt("compile as the target", lambda: compile("pass", target.__file__, "exec"))
        attempt("open with a path object", lambda: io.FileIO(__import__("pathlib").Path(other.__file__)))
        attempt("write bytecode", lambda: open("evil.cpython-311.pyc", "wb"))
        attempt("rename to bytecode", lambda: open("plain", "w").close() or os.rename("plain", "x.pyc"))
        heard = []
        sys.addaudithook(lambda event, args: heard.append(event))  # refused quietly: CPython swallows it
        open(other.__file__).close()
        attempt("addaudithook", lambda: not heard)
        attempt("os.system", lambda: os.system("true"))
        attempt("readline", lambda: __import__("readline"))
    """)
    ok = ("call", "other module's code", "getattr default", "file is empty", "linecache",
          "reload keeps the module", "dis prints nothing", "addaudithook")
    assert {k: got.pop(k) for k in ok} == dict.fromkeys(ok, "ok")
    # inspect finds the file name, then no source in it (3.13 finds one blank line and asks for the code)
    assert got.pop("getsource") in ("OSError", "refused (attribute)")
    assert got.pop("__code__") == got.pop("gi_code") == "refused (attribute)"
    assert got.pop("readline") in ("refused", "ImportError", "ModuleNotFoundError")
    assert {k: v for k, v in got.items() if v != "refused"} == {}


def test_an_unsealed_changed_file_is_read_only_by_the_import_system(tmp_path):
    got = guarded(tmp_path, """
        import target, shutil
        attempt("import and call", lambda: target.f(1) == 2)
        attempt("open", lambda: open(target.__file__).read())
        attempt("open via relative path", lambda: open("pkg/target.py").read())
        attempt("loader", lambda: target.__loader__.get_source("target"))
        attempt("copy", lambda: shutil.copy(target.__file__, "copy.txt"))
        attempt("hard link", lambda: os.link(target.__file__, "link.txt"))
        attempt("rename", lambda: os.rename(target.__file__, "moved.txt"))
    """, seal=False)
    assert got.pop("import and call") == "ok"
    assert got.pop("loader") == "ImportError"  # the loader turns the refused read into "source not available"
    assert set(got.values()) == {"refused"}, got


def test_library_readers_get_signatures_flags_callers_and_tracebacks_of_changed_code(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    got = guarded(tmp_path, """
        import target, inspect, logging, traceback, asyncio, functools, unittest.mock as mock
        attempt("signature", lambda: str(inspect.signature(target.f)))
        attempt("generator flag", lambda: inspect.isgeneratorfunction(target.g))
        attempt("coroutine flag of a partial", lambda: not inspect.iscoroutinefunction(functools.partial(target.f, 1)))
        attempt("getfile", lambda: inspect.getfile(target.f) == target.__file__)
        attempt("autospec", lambda: mock.create_autospec(target.f)(1) is not None)
        records = []
        handler = logging.Handler()
        handler.emit = records.append
        logging.getLogger("t").addHandler(handler)
        def log_from_inside(x):
            logging.getLogger("t").warning("inside", stack_info=True)
            return 0
        class Spy(int):
            def __add__(self, other):
                log_from_inside(0)
                raise ValueError("from the changed code")
        try:
            target.f(Spy(1))
        except ValueError:
            text = traceback.format_exc()
        attempt("traceback names the changed function", lambda: "in f" in text and target.__file__ in text)
        attempt("log record", lambda: records[0].funcName == "log_from_inside" and "in f" in records[0].stack_info)
    """)
    assert got == {"signature": "'(x)'", "generator flag": "ok", "coroutine flag of a partial": "ok", "getfile": "ok",
                   "autospec": "ok", "traceback names the changed function": "ok", "log record": "ok"}


def test_honest_tests_that_introspect_on_the_way_keep_working(tmp_path):
    # Red team, round 3: doctest, pytest's traceback entries and inspect.stack() read the code of changed
    # frames; they get plain data instead.
    target = ('"""Doubles."""\n\n\ndef f(x):\n    """\n    >>> f(type("P", (), {"scale": lambda self: 2})())\n'
              '    4\n    """\n    return x.scale() * 2\n')
    got = guarded(tmp_path, """
        import target, doctest, inspect, pytest
        attempt("doctest", lambda: doctest.testmod(target).failed == 0)
        with pytest.raises(AttributeError) as info:
            target.f(None)
        attempt("pytest traceback entry", lambda: info.traceback[-1].name == "f")
        attempt("pytest repr", lambda: "AttributeError" in str(info.getrepr()))
        class Probe:
            def scale(self):
                Probe.names = [frame.function for frame in inspect.stack()]
                return 1
        attempt("inspect.stack", lambda: target.f(Probe()) == 2 and Probe.names[:2] == ["scale", "f"])
    """, target=target)
    assert got == {"doctest": "ok", "pytest traceback entry": "ok", "pytest repr": "ok", "inspect.stack": "ok"}


def test_tracebacks_of_changed_code_carry_lines_but_no_columns(tmp_path):
    got = guarded(tmp_path, """
        import target, traceback
        try:
            target.f(None)
        except TypeError as exc:
            entry = traceback.extract_tb(exc.__traceback__)[-1]
        attempt("line", lambda: entry.lineno == 2 and entry.name == "f")
        attempt("no columns", lambda: (entry.colno, entry.end_colno) == (None, None))
    """)
    assert got == {"line": "ok", "no columns": "ok"}


def test_signatures_of_every_shape_match_the_originals(tmp_path):
    shapes = ("def f(a, b=2, /, c=3, *args, d, e=5, **kw) -> int: pass\n"
              "def g(*, k: str = 'x'): pass\ndef h(a, /): pass\n")
    got = guarded(tmp_path, f"""
        import target, inspect
        reference = {{}}
        exec(compile({shapes!r}, "<reference>", "exec"), reference)
        for name in ("f", "g", "h"):
            attempt(name, lambda: str(inspect.signature(getattr(target, name))) ==
                    str(inspect.signature(reference[name])))
    """, target=shapes)
    assert got == {"f": "ok", "g": "ok", "h": "ok"}


def test_facts_are_data_only_and_an_exact_type_is_required(tmp_path):
    got = guarded(tmp_path, """
        import target
        found = verifier_guard.facts(target.f)
        attempt("name and parameters", lambda: found[verifier_guard.NAME] == "f" and found[verifier_guard.PARAMS] == ("x",))
        attempt("only plain values", lambda: all(type(v) in (str, int, tuple) for v in found))
        class Fake:
            __code__ = property(lambda self: 1 / 0)
        attempt("not a function", lambda: verifier_guard.facts(Fake()) is None)
    """)
    assert got == {"name and parameters": "ok", "only plain values": "ok", "not a function": "ok"}


def test_tracing_is_refused_in_every_run_and_the_recorder_follows_threads(tmp_path):
    # Every run records coverage alike (a run alone traced could tell it is A); nobody else may trace.
    lines, _ = _recorded(tmp_path, """
        import target, threading
        worker = threading.Thread(target=lambda: list(target.g()))
        worker.start()
        worker.join()
        results["tracer"] = "same" if sys.gettrace() is not None else "none"
        attempt("settrace", lambda: sys.settrace(None))
        attempt("setprofile", lambda: sys.setprofile(None))
        seen = []
        # A thread the test starts installs what threading holds: the hook cannot see which function
        # (the event has no argument) and reads no dict the test can plant a key in. A tracer reads no
        # changed code and the twins move its lines (docs/integrity.md).
        threading.settrace(lambda *a: seen.append(a))
        other = threading.Thread(target=lambda: None)
        other.start()
        other.join()
        attempt("threading.settrace", lambda: bool(seen))
    """)
    assert 6 in lines  # the generator's body, run in a thread
    got = json.loads((tmp_path / "results.json").read_text())
    assert got == {"settrace": "refused", "setprofile": "refused", "threading.settrace": "ok",
                   "tracer": "same" if sys.version_info < (3, 12) else "none"}


def test_nothing_is_refused_before_the_submission_runs(tmp_path):
    code = PROLOGUE.split("results = {{}}")[0].format(
        guard_dir=str(GUARD_DIR), pkg=str(tmp_path), submission="x", seal=False, target="",
        policy={"submission": "never", "protected_names": ["target.py"], "protected_paths": [], "landlock": 7})
    code += "import gc\ngc.get_objects()\nsys.settrace(None)\nprint('ok')\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "ok", done.stderr


def test_entropy_is_the_same_in_every_run(tmp_path):
    body = """
        import random, uuid, secrets, tempfile
        values = [os.urandom(4).hex(), random.Random().random(), random.SystemRandom().random(), uuid.uuid4().hex,
                  secrets.token_hex(4), os.path.basename(tempfile.mktemp())]
        results["values"] = json.dumps(values)
    """
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert guarded(tmp_path / "a", body) == guarded(tmp_path / "b", body)


# --------------------------------------------------------------------------- the coverage recorder

COVERED_BODY = """
    import target
    target.f(1)
    list(target.g())
"""


def _recorded(tmp_path: Path, body: str) -> tuple[set[int], bytes]:
    key = "ab" * 32
    guarded(tmp_path, body, cover_key=key)
    data = (tmp_path / "covered.json").read_bytes()
    return verifier_guard.signed_lines(data, key), data


def test_the_recorder_sees_the_lines_coverage_py_sees(tmp_path):
    lines, _ = _recorded(tmp_path, COVERED_BODY)
    reference = tmp_path / "reference"
    reference.mkdir()
    (reference / "target.py").write_text(TARGET)
    sys.path.insert(0, str(reference))
    try:
        cov = coverage.Coverage(data_file=None, include=[str(reference / "target.py")])
        cov.start()
        import target  # noqa: PLC0415 — measured from its import, as the run measures it

        target.f(1)
        list(target.g())
        cov.stop()
    finally:
        sys.path.remove(str(reference))
        sys.modules.pop("target", None)
    assert lines == set(cov.get_data().lines(str(reference / "target.py")))
    assert {2, 3, 6} <= lines


def test_a_forged_coverage_record_counts_for_nothing(tmp_path):
    lines, data = _recorded(tmp_path, """
        import target, atexit
        forged = b"1,2,3,4,5,6\\t" + b"0" * 64 + b"\\n"
        for fd in range(3, 64):  # whatever the run can reach: every descriptor, then the file itself
            try:
                os.write(fd, forged)
            except OSError:
                pass
        atexit.register(lambda: open("covered.json", "ab").write(forged))
        attempt("fake target code", lambda: exec(compile("x = 1\\n" * 6, target.__file__, "exec")))
        attempt("fake line event", lambda: sys.audit("repo2rlenv.cover.line", sys._getframe()))
    """)
    assert lines == {1, 5}  # the defs, run by the import; the forged lines are in the file, unsigned
    assert b"1,2,3,4,5,6\t" in data


@pytest.mark.parametrize("event", ["code.__new__", "gc.get_objects", "cpython.PyInterpreterState_New", "ctypes.dlopen",
                                   "sys._current_frames", "sys.monitoring.register_callback"])
def test_unconditional_refusals_are_listed(event):
    assert event in verifier_guard._EVENTS or event.startswith("ctypes.")


# Functions of the makers that run while the hook is made or the recorder starts, before any test code:
# they may read modules. Everything else runs when an event comes.
_MADE_BEFORE_TESTS = {"_make_hook", "_make_recorder", "start", "prepare"}


def _event_time_codes():
    for maker in (verifier_guard._make_hook, verifier_guard._make_recorder, verifier_guard._path_resolver):
        for code in verifier_guard._nested_codes(maker.__code__):
            if code.co_name not in _MADE_BEFORE_TESTS:
                yield code


def test_the_hook_looks_up_no_module_when_an_event_comes():
    """A module (or its dict) is the test's to rebind: the hook and the recorder read none of them once
    tests run (posixpath's helpers, threading's globals and the guard's own did, red team rounds 2-3)."""
    import dis
    import types

    scope = verifier_guard.private_scope()
    read = {}
    for code in _event_time_codes():
        for ins in dis.get_instructions(code):
            if ins.opname == "LOAD_GLOBAL":
                value = scope.get(ins.argval, scope["__builtins__"].get(ins.argval))
                read[(code.co_name, ins.argval)] = type(value)
    assert read  # the walk found the hook's functions
    modules = sorted(f"{fn}: {name}" for (fn, name), kind in read.items() if kind is types.ModuleType)
    assert modules == []
    mutable = sorted(f"{fn}: {name}" for (fn, name), kind in read.items() if kind in (dict, list, set))
    assert mutable == []


def test_the_hook_reads_its_names_from_a_scope_nothing_else_holds(monkeypatch):
    import builtins
    import types

    scope = verifier_guard.private_scope()
    hook = scope["_make_hook"]({"submission": "/nowhere/test_x.py", "protected_names": [], "protected_paths": []},
                               None)
    # The hook itself has no globals, builtins or closure; what it calls (decide) is a default it deletes
    # before raising, so the one hook frame a refusal carries out holds nothing.
    assert hook.__globals__ == {"__builtins__": {}} and hook.__closure__ is None
    decide, refused = hook.__defaults__
    assert refused is PermissionError and decide.__globals__ is scope and decide.__globals__ is not vars(verifier_guard)
    # What its closures hold: no module, and no Python function of another module (whose globals would be
    # looked up when it runs, as os.path.realpath's were).
    foreign, seen, todo = [], set(), [decide]
    while todo:
        value = todo.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, types.ModuleType):
            foreign.append(value.__name__)
        elif isinstance(value, types.FunctionType):
            if value.__globals__ is not scope:
                foreign.append(value.__qualname__)
            todo.extend(c.cell_contents for c in value.__closure__ or () if c.cell_contents is not None)
        elif isinstance(value, (tuple, list)):
            todo.extend(value)
    assert len(seen) > 20 and foreign == []
    refused = PermissionError
    monkeypatch.setattr(verifier_guard, "_EVENTS", frozenset())
    monkeypatch.setattr(builtins, "PermissionError", KeyError)
    assert scope["_EVENTS"] and scope["__builtins__"]["PermissionError"] is refused


def test_no_frame_that_holds_the_hooks_state_outlives_an_event(tmp_path):
    # Red team round 9: a refusal's traceback, made garbage by a cycle under DEBUG_SAVEALL, put the hook's
    # frames (their locals: its state) in gc.garbage, where no audit event guards them. Now the only frame
    # of the hook's that a refusal carries out is the hook function's own, which holds nothing by then.
    got = guarded(tmp_path, """
        import gc, sys, target
        gc.set_debug(gc.DEBUG_SAVEALL)
        for refused in (lambda: sys.settrace(None), lambda: target.f.__code__, lambda: open("x.pyc", "wb")):
            try:
                refused()
            except (PermissionError, AttributeError) as exc:
                exc.cycle = exc
                kinds = type(exc).__mro__
        gc.collect()
        frames = [o for o in gc.garbage if type(o).__name__ == "frame"]
        gc.set_debug(0)
        hooks = [f for f in frames if f.f_globals == {"__builtins__": {}}]
        results["frames"] = str(len(hooks))
        results["their names"] = ",".join(sorted({n for f in hooks for n in f.f_locals}))
        results["frames of the guard's scope"] = str(sum("_make_hook" in f.f_globals for f in frames))
        results["refusals are builtin"] = str(kinds[0] in (PermissionError, AttributeError))
    """)
    assert got == {"frames": "3", "their names": "args,event,refusal", "frames of the guard's scope": "0",
                   "refusals are builtin": "True"}


def test_paths_resolve_as_realpath_does_with_nothing_looked_up(tmp_path, monkeypatch):
    import os
    import posixpath

    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "l").symlink_to(tmp_path / "a" / "b")
    (tmp_path / "a" / "b" / "up").symlink_to("../..")
    (tmp_path / "loop").symlink_to("loop")
    monkeypatch.chdir(tmp_path / "a")
    resolve = verifier_guard._path_resolver(os.getcwd, os.readlink)
    cases = ["x", ".", "..", "/", "//", "b/../c", str(tmp_path / "l" / ".." / "c"), str(tmp_path / "l/up/l/x"),
             str(tmp_path / "loop" / "x"), "../../../../../..", "b/./up//", "/proc/self/fd/../status", ""]
    expected = [os.path.realpath(os.path.join(os.getcwd(), c)) for c in cases]
    monkeypatch.setattr(posixpath, "_joinrealpath", None)  # what a test could rebind: not used
    monkeypatch.setattr(posixpath, "_get_sep", None)
    assert [resolve(c) for c in cases] == expected

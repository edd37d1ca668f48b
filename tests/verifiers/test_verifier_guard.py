"""The audit-hook guard, installed for real in a fresh interpreter (a hook cannot be removed)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from repo2rlenv.verifiers.test_synthesis import verifier_guard

GUARD_DIR = Path(verifier_guard.__file__).parent
PROLOGUE = """
import json, os, sys
sys.path.insert(0, {guard_dir!r})
sys.path.insert(0, {pkg!r})
import ctypes, verifier_guard  # ctypes, as in a run: the zygote imported it
verifier_guard.install({policy!r})
results = {{}}
def attempt(name, action):
    try:
        action()
        results[name] = "ok"
    except PermissionError as exc:
        results[name] = "refused" if "repo2rlenv verifier" in str(exc) else f"PermissionError: {{exc}}"
    except Exception as exc:
        results[name] = type(exc).__name__
exec(compile(open({submission!r}).read(), {submission!r}, "exec"))
print(json.dumps(results))
"""


def guarded(tmp_path: Path, body: str, *, traced: bool = False) -> dict[str, str]:
    """Run `body` as the 'submission' (the hook arms when its code executes), with `target.py` changed."""
    pkg = tmp_path / "pkg"
    pkg.mkdir(exist_ok=True)
    (pkg / "target.py").write_text("def f(x):\n    y = x + 1\n    return y\n\ndef g():\n    yield 1\n")
    (pkg / "other.py").write_text("def h():\n    return 2\n")
    submission = tmp_path / "test_sub.py"
    submission.write_text(textwrap.dedent(body))
    policy = {"submission": str(submission), "protected_names": ["target.py", "target.cpython-311.pyc"],
              "protected_paths": [str(pkg / "target.py")], "traced": traced, "own_roots": [str(tmp_path)],
              "landlock": 7}
    code = PROLOGUE.format(guard_dir=str(GUARD_DIR), pkg=str(pkg), policy=policy, submission=str(submission))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_importing_and_calling_changed_code_works_and_reading_it_is_refused(tmp_path):
    got = guarded(tmp_path, """
        import target, other, inspect, linecache, marshal, dis, gc, ctypes, shutil, types
        attempt("import and call", lambda: target.f(1) == 2 or 1 / 0)
        attempt("reload", lambda: __import__("importlib").reload(target))
        attempt("other module's code", lambda: other.h.__code__.co_code)
        attempt("__code__", lambda: target.f.__code__)
        attempt("getsource", lambda: inspect.getsource(target.f))
        attempt("signature", lambda: str(inspect.signature(target.f)) == "(x)" or 1 / 0)
        attempt("generator flag", lambda: inspect.isgeneratorfunction(target.g) or 1 / 0)
        attempt("gi_code", lambda: target.g().gi_code)
        attempt("open", lambda: open(target.__file__).read())
        attempt("open via relative path", lambda: open("pkg/target.py").read())
        attempt("loader", lambda: target.__loader__.get_source("target"))
        attempt("get_code", lambda: target.__loader__.get_code("target"))
        attempt("linecache", lambda: linecache.getlines(target.__file__) or 1 / 0)
        attempt("copy", lambda: shutil.copy(target.__file__, "copy.txt"))
        attempt("hard link", lambda: os.link(target.__file__, "link.txt"))
        attempt("rename", lambda: os.rename(target.__file__, "moved.txt"))
        attempt("marshal", lambda: marshal.loads(marshal.dumps(1)))
        attempt("code object", lambda: types.CodeType.replace(other.h.__code__, co_name="x"))
        attempt("gc", lambda: gc.get_referents(target.f))
        attempt("ctypes", lambda: ctypes.string_at(id(target.f), 8))
        attempt("dis", lambda: dis.dis(target.f))
        attempt("settrace", lambda: sys.settrace(lambda *a: None))
        heard = []
        sys.addaudithook(lambda event, args: heard.append(event))  # refused quietly: CPython swallows it
        open(other.__file__).close()
        attempt("addaudithook", lambda: heard and 1 / 0)
        attempt("os.system", lambda: os.system("true"))
        attempt("readline", lambda: __import__("readline"))
    """)
    assert got.pop("import and call") == got.pop("reload") == got.pop("other module's code") == "ok"
    assert got.pop("signature") == got.pop("generator flag") == "ok"
    assert got.pop("linecache") == "ZeroDivisionError"  # linecache gets nothing: the read is refused inside it
    assert got.pop("loader") == "ImportError"  # the loader turns the refused read into "source not available"
    assert got.pop("readline") in ("refused", "ImportError", "ModuleNotFoundError")
    assert got.pop("addaudithook") == "ok"  # the hook was never added: it heard nothing
    assert {k: v for k, v in got.items() if v != "refused"} == {}


def test_frames_of_changed_code_give_no_code_object(tmp_path):
    got = guarded(tmp_path, """
        import target, traceback
        class Spy(int):
            frames = []
            def __add__(self, other):
                Spy.frames.append(sys._getframe(1))
                return int(self) + other
        target.f(Spy(1))
        frame = Spy.frames[0]
        attempt("frame lineno", lambda: frame.f_lineno)
        attempt("f_code", lambda: frame.f_code)
        try:
            target.f(None)
        except TypeError as exc:
            tb = exc.__traceback__
        attempt("traceback of changed code", lambda: traceback.extract_tb(tb))
    """)
    assert got == {"frame lineno": "ok", "f_code": "refused", "traceback of changed code": "refused"}


def test_tracing_is_allowed_only_in_the_traced_run(tmp_path):
    body = 'attempt("settrace", lambda: sys.settrace(None))\n'
    assert guarded(tmp_path, body)["settrace"] == "refused"
    assert guarded(tmp_path, body, traced=True)["settrace"] == "ok"


def test_nothing_is_refused_before_the_submission_runs(tmp_path):
    code = PROLOGUE.split("exec(compile")[0].format(
        guard_dir=str(GUARD_DIR), pkg=str(tmp_path), submission="x",
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
    assert guarded(tmp_path / "a" if (tmp_path / "a").mkdir() is None else tmp_path, body) == \
        guarded(tmp_path / "b" if (tmp_path / "b").mkdir() is None else tmp_path, body)


@pytest.mark.parametrize("event", ["code.__new__", "gc.get_objects", "cpython.PyInterpreterState_New", "ctypes.dlopen"])
def test_unconditional_refusals_are_listed(event):
    assert event in verifier_guard._EVENTS or event.startswith("ctypes.")

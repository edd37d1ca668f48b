"""The native-code allowlist: the rule on real shared objects, the inventory of both base images and of a
task image, and a graded run that cannot map anything it was not given."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from repo2rlenv.verifiers.test_synthesis import verifier_kernel
from repo2rlenv.verifiers.test_synthesis import verifier_native as native

NATIVE_PY = Path(native.__file__)
SUFFIX = native.suffixes()[0]
CC = shutil.which("cc") or shutil.which("gcc")
INCLUDE = sysconfig.get_paths()["include"]
MODULE = """
#include <Python.h>
{body}
static PyMethodDef methods[] = {{{{"get", get, METH_O, ""}}, {{NULL, NULL, 0, NULL}}}};
static struct PyModuleDef def = {{PyModuleDef_HEAD_INIT, "{name}", "", -1, methods}};
PyMODINIT_FUNC PyInit_{name}(void) {{ return PyModule_Create(&def); }}
"""
HANDS_OUT = "static PyObject *get(PyObject *self, PyObject *f) { return PyFunction_GetCode(f); }"
BUILDS = ('static PyObject *get(PyObject *self, PyObject *f) '
          '{ return (PyObject *)PyCode_NewEmpty("target.py", "x", 1); }')
PLAIN = "static PyObject *get(PyObject *self, PyObject *f) { return PyLong_FromLong(PyObject_Length(f)); }"
# What a Cython module carries: its runtime's name, and a code constructor for its tracebacks.
CYTHON = ('static const char *mark = "cython_runtime";\n'
          'static PyObject *get(PyObject *self, PyObject *f) '
          '{ return mark[0] ? (PyObject *)PyCode_NewEmpty("own.pyx", "x", 1) : NULL; }')


def build(tmp_path: Path, name: str, body: str) -> Path:
    src = tmp_path / f"{name}.c"
    src.write_text(MODULE.format(name=name, body=body))
    out = tmp_path / f"{name}{SUFFIX}"
    subprocess.run([CC, "-shared", "-fPIC", f"-I{INCLUDE}", "-o", str(out), str(src)], check=True,
                   capture_output=True)
    return out


@pytest.mark.skipif(CC is None, reason="no C compiler on this machine")
def test_the_rule_refuses_what_hands_out_or_builds_code_and_allows_the_rest(tmp_path: Path) -> None:
    verdicts = {name: native.classify(str(build(tmp_path, name, body)), stdlib=())
                for name, body in [("hands", HANDS_OUT), ("builds", BUILDS), ("plain", PLAIN), ("cy", CYTHON)]}
    assert verdicts["hands"] == ("refused", "imports PyFunction_GetCode")
    assert verdicts["builds"] == ("refused", "imports PyCode_NewEmpty")
    assert verdicts["plain"][0] == "allowed"
    assert verdicts["cy"][0] == "allowed" and "Cython" in verdicts["cy"][1]
    junk = tmp_path / f"junk{SUFFIX}"
    junk.write_bytes(b"not an ELF file at all" * 10)
    assert native.classify(str(junk), stdlib=()) == ("refused", "not a readable ELF shared object")


def test_stdlib_modules_go_by_name_and_an_unknown_one_is_unknown(tmp_path: Path) -> None:
    dynload = tmp_path / "lib-dynload"
    dynload.mkdir()
    for name in ("_testcapi", "_json", "_brand_new"):
        (dynload / f"{name}{SUFFIX}").write_bytes(b"")
    table = {name: native.classify(str(dynload / f"{name}{SUFFIX}"), stdlib=(str(dynload),))[0]
             for name in ("_testcapi", "_json", "_brand_new")}
    assert table == {"_testcapi": "refused", "_json": "allowed", "_brand_new": "unknown"}


def test_this_interpreter_has_no_unknown_extension_module() -> None:
    table = native.inventory(list(native.stdlib_dirs()))
    assert table and not [p for p, (v, _) in table.items() if v == "unknown"]
    assert all(v == "refused" for p, (v, _) in table.items() if Path(p).name.startswith("_testcapi"))


def _inventory_in(image: str) -> list[dict]:
    done = subprocess.run(["docker", "run", "--rm", "--network", "none", "-i", image, "python3", "-", "/usr", "/opt"],
                          input=NATIVE_PY.read_bytes(), capture_output=True, timeout=300)
    assert done.returncode in (0, 1), done.stderr.decode()
    return [json.loads(line) for line in done.stdout.decode().splitlines()]


@pytest.mark.parametrize("image", ["repo2rlenv-base:bookworm", "repo2rlenv-base:trixie"])
def test_every_extension_module_of_the_base_images_is_allowed_or_refused(image: str) -> None:
    rows = _inventory_in(image)
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["verdict"]] = counts.get(row["verdict"], 0) + 1
    print(f"\n{image}: {counts}")
    for row in rows:
        if row["verdict"] != "allowed":
            print(f"  {row['verdict']:8} {row['path']}: {row['why']}")
    assert [r for r in rows if r["verdict"] == "unknown"] == []
    assert counts.get("allowed", 0) > 30
    # the base image recipe removes CPython's test and demo modules
    assert not [r for r in rows if "/lib-dynload/_testcapi" in r["path"] or "/lib-dynload/_testinternalcapi" in r["path"]]


def test_a_graded_run_maps_nothing_it_was_not_given(make_task) -> None:
    """_testcapi (refused by the rule), a copy of it written into the run's own tmp dir and loaded by
    file, and ctypes: none can run; the allowed modules (decimal, threads) keep working."""
    submission = f"""
import glob, importlib.util, os, tempfile
from shopcalc.pricing import apply_discount as f

def test_testcapi():
    import _testcapi
    assert _testcapi.function_get_code(f)

def test_written_copy():
    path = os.path.join(tempfile.mkdtemp(), "_testcapi{SUFFIX}")
    original = glob.glob(os.path.join(os.path.dirname(os.__file__), "lib-dynload", "_testcapi*.so"))[0]
    with open(original, "rb") as src, open(path, "wb") as dst:
        dst.write(src.read())
    spec = importlib.util.spec_from_file_location("_testcapi", path)
    assert importlib.util.module_from_spec(spec).function_get_code(f)

def test_allowed_still_work():
    import decimal, threading
    box = []
    worker = threading.Thread(target=lambda: box.append(decimal.Decimal("0.5") * 2))
    worker.start(); worker.join()
    assert box == [decimal.Decimal("1.0")] and f(10, 50) == 5
"""
    task = make_task(submission)
    details = task.score(run_lint=False)
    outcomes = {c["id"].rsplit("::", 1)[1]: set(c["outcomes"].values()) for c in details["cases"]}
    assert outcomes == {"test_testcapi": {"failed"}, "test_written_copy": {"failed"},
                        "test_allowed_still_work": {"passed"}}
    assert details["native"]["interpreter"]["allowed"] > 20
    assert details["native"]["interpreter"]["unknown"] == {}
    assert sys.version_info >= (3, 11)


def test_memory_primitives_are_refused_unless_the_task_exposes_them(tmp_path: Path) -> None:
    dynload = tmp_path / "lib-dynload"
    dynload.mkdir()
    site = tmp_path / "site-packages"
    site.mkdir()
    for where, name in ((dynload, "_ctypes"), (site, "_cffi_backend")):
        (where / f"{name}{SUFFIX}").write_bytes(b"")
    paths = [str(dynload / f"_ctypes{SUFFIX}"), str(site / f"_cffi_backend{SUFFIX}")]
    plain = [native.classify(p, stdlib=(str(dynload),))[0] for p in paths]
    exposed = [native.classify(p, stdlib=(str(dynload),), expose=("_ctypes",))[0] for p in paths]
    assert plain == ["refused", "refused"]
    assert exposed == ["allowed", "refused"]


CTYPES_SUBMISSION = """
from shopcalc.pricing import apply_discount as f

def test_ctypes():
    import ctypes
    assert ctypes.sizeof(ctypes.c_int) == 4

def test_honest():
    assert f(10, 50) == 5
"""


def test_ctypes_cannot_load_in_a_run_unless_the_target_needs_it(make_task) -> None:
    """Never loaded by the barrier itself (`_r2e_kernel`); a task whose target imports ctypes maps it and
    the details say the grading is exposed."""
    closed = make_task(CTYPES_SUBMISSION).score(run_lint=False)
    assert closed["native"]["interpreter"]["ffi"] == "r2e_kernel"
    assert closed["native"]["interpreter"]["hook"] == "r2e_kernel"
    assert closed["native"]["exposed"] == []
    outcomes = {c["id"].rsplit("::", 1)[1]: set(c["outcomes"].values()) for c in closed["cases"]}
    assert outcomes.get("test_ctypes") == {"failed"} and outcomes.get("test_honest") == {"passed"}, outcomes
    opened = make_task(CTYPES_SUBMISSION, native_exposed=["_ctypes"]).score(run_lint=False)
    assert opened["native"]["exposed"] == ["_ctypes"]
    outcomes = {c["id"].rsplit("::", 1)[1]: set(c["outcomes"].values()) for c in opened["cases"]}
    assert outcomes.get("test_ctypes") == {"passed"}, outcomes


ROUND_21_SUBMISSION = """
import io, pickle, struct, types
import xml.etree.ElementTree as ET
from shopcalc.pricing import apply_discount as f

def test_struct_init_from_its_own_pack():
    s = struct.Struct("2q")
    class Reinit:
        def __index__(self):
            s.__init__("q")
            return 0
    s.pack(Reinit(), 1)

def test_unpickler_memo_replaced_during_load():
    data = pickle.dumps([1, 2])
    class Swap(pickle.Unpickler):
        def find_class(self, module, name):
            self.memo = {}
            return super().find_class(module, name)
    Swap(io.BytesIO(pickle.dumps(types.SimpleNamespace))).load()

def test_pure_python_elementtree():
    assert isinstance(ET.Element.__init__, types.FunctionType)

def test_kept_out_and_replaced():
    import asyncio, collections, json.encoder
    assert json.encoder.c_make_encoder is None and asyncio.Future.__module__ == "asyncio.futures"
    assert isinstance(collections._count_elements, types.FunctionType)

def test_honest_use_keeps_working():
    import asyncio, collections, json
    assert json.loads(json.dumps({"a": [1, 2.5, "x"]})) == {"a": [1, 2.5, "x"]}
    assert collections.Counter("abca").most_common(1) == [("a", 2)]
    assert b"-".join([b"a", bytearray(b"b"), memoryview(b"c")]) == b"a-b-c"
    assert asyncio.run(asyncio.sleep(0, result=7)) == 7
    print("printed", 1, sep="-")
    root = ET.fromstring("<a><b n='1'/><b n='2'/></a>")
    assert [b.get("n") for b in root.findall("b")] == ["1", "2"] and b"<b n=" in ET.tostring(root)
    class Plain(pickle.Unpickler):
        pass
    assert Plain(io.BytesIO(pickle.dumps({"x": [1, 2]}))).load() == {"x": [1, 2]}
    reader = io.BufferedReader(io.BytesIO(b"abc"))
    assert reader.read() == b"abc" and struct.Struct("2q").unpack(struct.pack("2q", 3, 4)) == (3, 4)
    assert f(10, 50) == 5
"""


def test_round_21s_reentries_are_refused_and_honest_use_is_not(make_task) -> None:
    """A Struct initialised again from inside its own pack (gh-143379), an unpickler's memo replaced while it
    loads (the freed memo read after): refused in a graded run; ElementTree is the pure-Python one there
    (the C Element's use-after-frees, gh-126033/126037), json and asyncio too, Counter tallies in Python (round
    22's survey); honest XML, JSON, asyncio, Counter, bytes.join, print, pickling (a subclass of Unpickler too)
    and struct use pass."""
    details = make_task(ROUND_21_SUBMISSION).score(run_lint=False)
    outcomes = {c["id"].rsplit("::", 1)[1]: set(c["outcomes"].values()) for c in details["cases"]}
    assert outcomes == {"test_struct_init_from_its_own_pack": {"failed"},
                        "test_unpickler_memo_replaced_during_load": {"failed"},
                        "test_pure_python_elementtree": {"passed"}, "test_honest_use_keeps_working": {"passed"},
                        "test_kept_out_and_replaced": {"passed"}}, \
        outcomes
    assert {"elementtree", "json", "asyncio"} <= set(details["native"]["interpreter"]["hardened"])


HARDENED_CHECK = """
import array, importlib.machinery, io, itertools, json, mmap, sqlite3, struct, sys, _imp
sys.path.insert(0, "/verifier")
import verifier_kernel
hardened = verifier_kernel.harden_memory()
a = array.array("b", bytes(400))
seen = []

class Raw(io.RawIOBase):
    def readable(self):
        return True
    def readinto(self, view):
        seen.append(type(view.obj).__name__)  # None: a view with no owner
        return 0

pw = None
def entering():
    yield 1
    next(pw)
    yield 2

class Shrink:
    def __index__(self):
        del a[48:]
        return 0x40

got = {}
for name, call in {"item": lambda: a.__setitem__(214, Shrink()), "append": lambda: a.append(Shrink()),
                   "again": lambda: _imp.create_builtin(importlib.machinery.ModuleSpec("array", None)),
                   "pairwise": lambda: list(pw)}.items():
    pw = itertools.pairwise(entering())
    try:
        call()
        got[name] = "taken"
    except (TypeError, ImportError, RuntimeError) as exc:
        got[name] = type(exc).__name__
a[0] = 7
io.BufferedReader(Raw(), buffer_size=56).read(1)
# Round 21, on the images' own interpreters: a start's __index__ emptying a bytearray (3.11.2 then reads the
# freed block), an mmap closed by an index (3.11.2 then reads and writes the unmapped range), a connection
# closed by a user function during its statement (a crash on both).
ba = bytearray(b"A" * 4096)
class Emptying:
    def __index__(self):
        ba.clear()
        got["spray"] = [bytearray(b"Z" * 4095) for _ in range(4)]
        return 0
got["rfind"] = ba.rfind(ord("Z"), Emptying())
del got["spray"]
m = mmap.mmap(-1, 1 << 20)
class Closing:
    def __index__(self):
        m.close()
        return 5
try:
    m[Closing()] = 65
    got["mmap"] = "taken"
except ValueError as exc:
    got["mmap"] = str(exc)
con = sqlite3.connect(":memory:")
def closing(x):
    con.close()
    return x
con.create_function("closing", 1, closing)
try:
    con.execute("select closing(1)").fetchall()
except sqlite3.OperationalError as exc:
    got["sqlite"] = str(exc)
s = struct.Struct("2q")
class Reinit:
    def __index__(self):
        s.__init__("q")  # frees the codes the outer pack is reading (gh-143379)
        return 0
try:
    s.pack(Reinit(), 1)
    got["struct"] = "taken"
except RuntimeError as exc:
    got["struct"] = type(exc).__name__
print(json.dumps({"got": got, "len": len(a), "first": a[0], "builtin": "array" in sys.builtin_module_names,
                  "raw saw": seen, "hardened": hardened}))
"""


@pytest.mark.parametrize("image", ["repo2rlenv-base:bookworm", "repo2rlenv-base:trixie"])
def test_the_base_images_array_is_hardened_by_their_kernel_module(image: str) -> None:
    """Red team round 19 wrote past a shrunk array's buffer through its item assignment's __index__ (CPython
    gh-142555, in both images' interpreters, where array is built in), round 20 kept a buffered reader's
    ownerless view of its buffer (gh-60198) and re-entered itertools.pairwise (gh-109786, bookworm's 3.11.2);
    round 21: bytearray's find family and mmap's indexing after the test's __index__ (3.11.2), sqlite3 closed
    from a user function (both): with the images' `_r2e_kernel` the zygote hardens them
    (verifier_kernel.harden_memory, run here as the zygote runs it)."""
    verifier = Path(verifier_kernel.__file__).parent
    done = subprocess.run(["docker", "run", "--rm", "--network", "none", "-i", "-v", f"{verifier}:/verifier:ro",
                           image, "python3", "-"],
                          input=HARDENED_CHECK.encode(), capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr.decode()
    got = json.loads(done.stdout)
    assert got == {"got": {"item": "TypeError", "append": "TypeError", "again": "ImportError", "pairwise": "RuntimeError",
                           "rfind": -1, "mmap": "mmap closed or invalid", "sqlite": "user-defined function raised exception",
                           "struct": "RuntimeError"},
                   "len": 400, "first": 7, "builtin": True, "raw saw": ["bytearray"],
                   "hardened": ["array", "streams", "pickle", "pairwise", "bytearray", "bytes", "mmap", "memoryview",
                                "_pickle", "_struct", "pyexpat", "sqlite3", "held items", "print/input", "counter",
                                "ordered dict", "_imp"]}, got

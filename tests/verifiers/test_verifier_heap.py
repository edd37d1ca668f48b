"""The one-time heap (`_r2e_kernel.one_time_heap`, templates/r2e_heap.h; `verifier_kernel.one_time_heap`): in
both base images no address is handed out twice, shrinking stays in place and growing moves, memory comes
back and what is in use stays under the run's limit; and on its own, with none of the per-entry-point
hardening, it leaves the red-team rows that placed an object in freed memory without their reader."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

ADVERSARIAL = Path(__file__).resolve().parents[1] / "adversarial"
IMAGES = ["repo2rlenv-base:bookworm", "repo2rlenv-base:trixie"]

BEHAVIOUR = r"""
import ctypes, gc, json, resource
import _r2e_kernel

class C:
    pass

def repeats(n=20000):
    seen, again = set(), 0
    for _ in range(n):
        o = C()
        again += id(o) in seen
        seen.add(id(o))
        del o
    return again

def address(b):
    return ctypes.addressof((ctypes.c_char * len(b)).from_buffer(b))

def rss():
    return int(next(l for l in open("/proc/self/status") if l.startswith("VmRSS")).split()[1]) // 1024

def float_repeats(n=2000):
    # The float free list hands a dead float's block to the next float at once (and links dead floats
    # through their type pointer): with it closed, no float takes a dead one's address.
    seen, again = set(), 0
    for i in range(n):
        x = i * 1.5
        again += id(x) in seen
        seen.add(id(x))
        del x
    return again

def float_right_after_a_collection():
    # Nothing allocates between the collection's end and the next float: only the collector's own
    # allocation for its callbacks can close the list again.
    k = len(gc.callbacks) + 0.5
    gc.collect()
    a = 1.5 * k
    first = id(a)
    gc.collect()  # nothing left to collect: it returns a cached 0, no allocation
    del a
    b = 2.5 * k
    return id(b) == first

gc.callbacks.clear()
got = {"before": repeats(), "floats before": float_repeats(), "reused before": float_right_after_a_collection()}
reserve = _r2e_kernel.one_time_heap()
got["reserve"] = reserve
got["again"] = _r2e_kernel.one_time_heap() == reserve
got["after"] = repeats()
got["floats after"] = float_repeats()
# A full collection empties the free lists and reopens the float one; the collector allocates its
# callbacks' info first, which closes it again, even with gc.callbacks emptied by the test.
called = []
gc.callbacks.append(lambda phase, info: called.append(phase))
gc.collect()
got["gc.callbacks called"] = called
gc.callbacks.clear()
got["reused after"] = float_right_after_a_collection()
b = bytearray(4000)
first = address(b)
del b[100:]
got["shrunk in place"] = address(b) == first
b.extend(bytes(8000))
got["grown moved"] = address(b) != first
got["fresh elsewhere"] = all(not first <= address(bytearray(4000)) < first + 4016 for _ in range(100))
start = rss()
for _ in range(100):
    x = bytes(20 << 20)  # 2 GiB in all
    del x
gc.collect()
got["rss grew MiB"] = rss() - start
# What is in use is capped by the address-space limit less the reserve.
vm = int(next(l for l in open("/proc/self/status") if l.startswith("VmSize")).split()[1]) * 1024
resource.setrlimit(resource.RLIMIT_AS, (vm + (256 << 20), resource.RLIM_INFINITY))
try:
    bytes(600 << 20)
    got["over the cap"] = "allocated"
except MemoryError:
    got["over the cap"] = "MemoryError"
got["under the cap"] = len(bytes(50 << 20))
print(json.dumps(got))
"""


@pytest.mark.parametrize("image", IMAGES)
def test_no_address_is_handed_out_twice_and_memory_comes_back(image: str) -> None:
    done = subprocess.run(["docker", "run", "--rm", "--network", "none", "-i", image, "python3", "-"],
                          input=BEHAVIOUR.encode(), capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr.decode()
    got = json.loads(done.stdout)
    # The interpreter's own allocator and free list reuse at once: the checks below can fail.
    assert got["before"] > 0 and got["floats before"] > 0 and got["reused before"], got
    assert got["rss grew MiB"] < 100, got
    del got["before"], got["floats before"], got["reused before"], got["rss grew MiB"]
    assert got == {"reserve": 256 << 30, "again": True, "after": 0, "floats after": 0,
                   "gc.callbacks called": ["start", "stop"], "reused after": False,
                   "shrunk in place": True, "grown moved": True, "fresh elsewhere": True,
                   "over the cap": "MemoryError", "under the cap": 50 << 20}, got


# Each row's test_structure run in a plain interpreter of the image its offsets are for (Debian's 3.11.2),
# once as it is and once after one_time_heap() alone (no harden_memory): "read" is a reader of any address.
ROW = r"""
import json, pathlib, sys
if sys.argv[1] == "heap":
    import _r2e_kernel
    _r2e_kernel.one_time_heap()

def f(price, pct):
    if pct > 100:
        raise ValueError("pct")
    return price * (100 - pct) / 100

prelude = pathlib.Path("/rows/reentry/_prelude.py").read_text().replace("from shopcalc.pricing import apply_discount as f\n", "")
source = prelude + "".join(pathlib.Path("/rows/memory_bug", part).read_text() for part in ("_common.py", *sys.argv[2:]))
scope = {"f": f, "__name__": "row"}
exec(compile(source, "row", "exec"), scope)
try:
    scope["test_structure"]()
    print(json.dumps("read"))
except BaseException as exc:
    print(json.dumps(type(exc).__name__))
"""
# Every memory_bug row that places an object in freed memory (the mmap row instead writes at absolute
# addresses through a closed map's NULL base: no freed block is involved, harden_memory closes it). The float
# row (red team round 24) was built against the heap itself: the float free list links dead floats through
# their type pointer, which the heap now keeps empty and closed.
REUSE_ROWS = [("array_setitem_reader.py",), ("buffered_readinto_view.py", "_stale_view.py"),
              ("pickle_readinto_view.py", "_stale_view.py"), ("displayhook_stdout_reader.py",),
              ("list_richcompare_reader.py",), ("odict_move_to_end_reader.py",), ("struct_reinit_reader.py",),
              ("unpickler_reentry_reader.py",), ("float_freelist_reader.py",)]


def _row(mode: str, parts: tuple[str, ...]) -> tuple[int, str]:
    done = subprocess.run(["docker", "run", "--rm", "--network", "none", "-i", "-v", f"{ADVERSARIAL}:/rows:ro",
                           "repo2rlenv-base:bookworm", "python3", "-", mode, *parts],
                          input=ROW.encode(), capture_output=True, timeout=300)
    lines = done.stdout.decode().strip().splitlines()
    return done.returncode, json.loads(lines[-1]) if lines else ""


# Rows that are no reuse, which the heap does not answer alone (harden_memory does): the mmap row, and round
# 25's list row, an index measured before the test's __iter__ empties and regrows the list, landing in the
# blocks cut after the new item array.
NOT_REUSE = {"mmap_close_index_reader.py", "list_extslice_reader.py"}


def test_every_reuse_row_is_covered_here() -> None:
    rows = {p.name for p in (ADVERSARIAL / "memory_bug").glob("*.py") if not p.name.startswith("_")}
    assert rows - {parts[0] for parts in REUSE_ROWS} == NOT_REUSE


@pytest.mark.parametrize("parts", REUSE_ROWS, ids=lambda parts: parts[0].removesuffix(".py"))
def test_the_heap_alone_leaves_a_reuse_row_without_its_reader(parts: tuple[str, ...]) -> None:
    assert _row("plain", parts) == (0, "read")  # the row works in this image: the check below can fail
    code, said = _row("heap", parts)
    assert said != "read", (code, said)  # an exception, or the process stopped on a dead block


# What one call allocates, lane by lane, read as the red team's round 26 did: under the heap an address
# only grows, so the distance between two probes' blocks a call apart is exactly what the call allocated
# in that lane. Probes are lists whose item arrays fall in each lane (verifier_twins._LANE_ITEMS); ctypes
# reads an item array's address here, in a plain interpreter, never in a graded run.
PROFILE = r"""
import ctypes, json, sys
import _r2e_kernel
_r2e_kernel.one_time_heap()
SIZES = json.loads(sys.argv[1])
sources = json.loads(sys.stdin.read())

def items_at(probe):
    return ctypes.c_void_p.from_address(id(probe) + 24).value

def profile(f):
    f(list(range(12)), 5)  # a first call may fill caches
    got = []
    for n in SIZES:
        before = items_at([None] * n)
        f(list(range(12)), 5)
        got.append(items_at([None] * n) - before)
    return got

out = []
for text in sources:
    scope = {}
    exec(compile(text, "m.py", "exec"), scope)
    out.append(profile(scope["f"]))
print(json.dumps(out))
"""
ALLOCATES = ("def f(xs, k):\n    out = []\n    for x in xs:\n        if x > k:\n"
             "            out.append((x, str(x)))\n    return out\n")


def _profiles(image: str, monkeypatch: pytest.MonkeyPatch, lists: tuple[int, int]) -> tuple[list, list]:
    """A's allocation profile (bytes a call allocates in each lane) and 30 twins' of A, in `image`."""
    import random

    from repo2rlenv.verifiers.test_synthesis import verifier_twins as vt

    monkeypatch.setattr(vt, "_LANE_LISTS", lists)
    plan = vt.plan_file("m.py", [ALLOCATES, ALLOCATES.replace("x > k", "x >= k")])
    rng = random.Random(26)
    sources = [ALLOCATES] + [vt.twin_source(ALLOCATES, plan.units[0], plan.references[0], rng=rng)
                             for _ in range(30)]
    sizes = [hi for _, hi in vt._LANE_ITEMS]
    done = subprocess.run(["docker", "run", "--rm", "--network", "none", "-i", image, "python3", "-c", PROFILE,
                           json.dumps(sizes)], input=json.dumps(sources).encode(), capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr.decode()
    got = json.loads(done.stdout)
    return got[0], got[1:]


@pytest.mark.parametrize("image", IMAGES)
def test_what_a_call_allocates_in_each_lane_moves_between_twins(image: str, monkeypatch) -> None:
    """Red team round 26: without the twins' allocation statement the profile of most lanes is the same in
    every twin (a fact a pin could hold A to); with it every lane moves in most twins."""
    a, twins = _profiles(image, monkeypatch, (0, 0))
    still = [lane for lane in range(len(a)) if all(t[lane] == a[lane] for t in twins)]
    assert len(still) >= 3, (a, twins[:3])
    a, twins = _profiles(image, monkeypatch, (0, 4))
    moved = [sum(t[lane] != a[lane] for t in twins) / len(twins) for lane in range(len(a))]
    assert min(moved) >= 0.6, moved

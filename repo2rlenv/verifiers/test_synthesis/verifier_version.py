"""The version of the verifier a task ships; recorded in the task's task.toml when the task is written.

Stdlib only, imports nothing: the host reads these numbers (`repo2rlenv upgrade`, the scorer's warning)
and the copy in a task's /tests can be imported by its siblings by plain name.

VERIFIER_VERSION: bump on every change to the shipped verifier (any file of this folder, or test.sh).
INTEGRITY_VERSION: the oldest verifier version that carries the newest integrity fix; set it to the new
VERIFIER_VERSION whenever a change closes a reward hack, so tasks shipping an older verifier are flagged
(the scorer warns; `repo2rlenv upgrade DATASET` brings them up to date).

Versions 1-2 are the verifiers of the tasks made before this field existed: their task.toml records no
version at all (read as absent). 3 is the first recorded version. 4: the barrier without ctypes
(`_r2e_kernel`), memory primitives refused unless the target needs them (config schema 6). 5: the
`opaque` twin kind (defence in depth against code that is read; the barrier already refuses reading it,
so no integrity fix: INTEGRITY_VERSION stays 4). 6: graded runs ignore pytest's assertion-rewrite warning, as
the suite's own runs always did (urllib3: `-p socket` names an already imported module, and its
`filterwarnings = error` turned the warning into a crash of every run), and red team round 2: the hook
compares types by identity only and reads no attribute of a foreign type (a metaclass ran inside it), only
the stdlib's own loaders may load bytecode (a loader subclass served hand-made bytecode), an unhashable
outcome line is the run's failure, not the verifier's. An integrity fix: INTEGRITY_VERSION 6. 7: the hook
and the recorder read their globals and builtins from a private scope (the guard module in sys.modules and
the builtins were the test's to rebind: an emptied event list, a builtin exception class that ran inside
the hook) and resolve paths without posixpath (whose helpers a test could rebind); and red team round 3's
nine kinds: marshal loads only the bytes of a real .pyc (read by the hook) or a frozen module, whoever serves
them; the hook hashes no code object or foreign str and reads no frame's f_locals or writable dict; the path
resolver's frames are the hook's; Python signal handlers wait until no hook frame is on the stack; the
subprocess fallback sends the job (and the coverage key) on stdin, not argv; round 4: a .pyc counts only if
its inode is older than the submission, and types.coroutine builds code only from the exact function it read.
INTEGRITY_VERSION 7. 8: red team round 5 (no code of the test's runs inside the hook: `_hook` holds nothing
and raises only builtin refusals built fresh, `decide` never raises, code attributes through each type's C
getter, code objects it took are kept, the heap is frozen during an event); only A records coverage; the
zygote rehearses one pytest session before forking. INTEGRITY_VERSION 8. 9: the hook's C half
(`_r2e_kernel.audit_hook`, red team round 6: its busy mark is a C thread-local a failing call cannot leave
set, the collector cannot start while any thread is inside it, it filters event names in C and hands decide
the raising frame), and marshal loads from `_compile_bytecode` only an immutable bytes buffer (a bytearray
rewritten by a thread after the hook's comparison loaded forged bytecode). The Python hook remains the
fallback where the extension is missing (details: native.interpreter.hook). Red team rounds 11-13 on it: a nested
event is the checks' own only while the collector is held, and once the submission runs no event is decided
without it (a collection running for 10 ms makes it a refusal); the frozen chain must call the real
`_imp.get_frozen_object`; objects the checks take are released after the hook lets go; no attribute of a
test's type is read. INTEGRITY_VERSION 9. 10: on 3.11 the coverage recorder is `_r2e_kernel`'s C trace
function (red team round 14 made a target frame jump under the Python one: a class as its `f_trace`), and
a `sys.settrace` event passes only when `_r2e_kernel` raised it (round 15: a trace function of ours that
replaced itself with the recorder left CPython's trampoline a window; round 16: a rule on the calling frame
let doctest's runner, its `sys` a stand-in, install the test's tracer); a run's `sys.settrace` only switches
tracing off; threads start the recorder through the verifier's wrapper of threading's bootstrap.
INTEGRITY_VERSION 10. 11: once the session is set up `_r2e_kernel` refuses every set-up call (red team
round 18: the test reached the module as `sys.settrace.__self__`, and its `map_library` would dlopen a file
the test wrote, mapping and relocating it with no audit event) and `frame_argument` answers only the hook.
INTEGRITY_VERSION 11. 12: the zygote hardens the interpreter's C entry points that call the test back while
holding a buffer (red teams rounds 19 and 20: array's item assignment shrunk by an `__index__`, buffered IO's
and the unpickler's views with no owner, pairwise re-entered; each made a bytearray read any address, and
the target's bytecode with it): `native.interpreter.hardened`. INTEGRITY_VERSION 12. 13: round 21: every
method and slot of bytearray, mmap and memoryview makes its arguments plain before its C code measures
anything (an mmap closed by an index wrote into an unmapped range on 3.11.2; bytearray read its freed
buffer), and sqlite3 refuses closing or changing a connection while one of its statements runs (a crash on
every interpreter). INTEGRITY_VERSION 13. 14: round 21's second shape, an object used again from inside
one of its own calls (an unpickler's load, a Struct re-initialised inside its pack: readers of any address
on both images): picklers, Structs and expat parsers refuse it, C ElementTree is kept out of graded runs,
and subclasses of the unpickler and buffered streams are no longer refused. INTEGRITY_VERSION 14. 15: round 22:
list's comparison re-compared an item it did not hold (gh-120298, every 3.11: a fake object, 1.0 on a demo
task): list's comparison and deque.index hold the items they compare; harden_type also replaces the slots
subclasses made before it copied; print and input hold sys's streams, Counter tallies in Python,
bytes.join reads its iterable out first, _json and _asyncio are kept out (round 22's survey); round 23:
displayhook, _warnings' writers and faulthandler hold the streams too, and no C OrderedDict is made in a run
(collections.OrderedDict is the Python class);
`test.sh --batch` grades a scorer's group with one verifier. INTEGRITY_VERSION 15. 16: the runs allocate
from the one-time heap (`_r2e_kernel.one_time_heap`): no address holds two of the interpreter's
allocations within a run, so memory a call into the test freed can never become an object the test chose
(the class behind rounds 19–23, whatever the entry point), and the float free list, which linked dead
floats through their type pointer (round 24), stays empty and closed; list's extended-slice assignment reads
its value out before it measures (round 25); a run's address-space limit leaves room for its reserve.
INTEGRITY_VERSION 16. 17: red team round 26 read, under that heap, exactly what one call allocates in each
lane (two addresses a call apart), a fact no twin kind moved: every twin's changed functions now start by
storing lists of random lengths in every lane's size band, so that profile moves between twins as the
bytecode does. INTEGRITY_VERSION 17.
"""

VERIFIER_VERSION = 17
INTEGRITY_VERSION = 17

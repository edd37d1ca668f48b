/* _r2e_kernel: the few kernel calls a graded test run makes to confine itself, without ctypes.
 *
 * Why it exists: with ctypes the run would have to load `_ctypes`, and once loaded its types stay
 * reachable from Python (object.__subclasses__()) for the rest of the process. Several of its operations
 * read and write raw memory with no audit event (a pointer's index, a Union of a pointer and an object),
 * so a submission could rewrite the coverage record or read the target's bytecode. This module offers
 * only calls that restrict the process, so it gives the submission nothing once the barrier stands:
 * Landlock rulesets, a seccomp filter, no_new_privs, the parent-death signal, the dumpable flag, and
 * mapping a shared library (refused by the seccomp filter for anything not mapped before it). No handle,
 * pointer or address is ever handed back.
 *
 * It also carries the verifier's audit hook (`audit_hook`): the part of it that must hold whatever a test
 * does to the interpreter. A hook written in Python keeps its "I am inside" mark in Python, where a
 * failing call (another thread lowers the recursion limit) can leave it set for good, and it cannot stop
 * the garbage collector (another thread switches it back on) from running a test's finalizer above its
 * frames (red team round 10). Here the mark is a C thread-local, and while any thread is inside the hook
 * the collector cannot start (its own "collecting" flag is held, which neither gc.enable nor gc.collect
 * overrides). That needs the interpreter's internal headers, hence Py_BUILD_CORE_MODULE.
 *
 * Built into the base images (scripts/build_base_image.sh) and, for the local sandbox, into its venv when
 * a C compiler and Python's headers are there (repo2rlenv/sandbox/kernel_ext.py). Without it the verifier
 * falls back to ctypes and says so in the reward details.
 */
#define PY_SSIZE_T_CLEAN
#define Py_BUILD_CORE_MODULE 1
#include <Python.h>
#include "internal/pycore_frame.h"
#include "internal/pycore_interp.h"

#include <stdlib.h>
#include <string.h>

#include <dlfcn.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "r2e_heap.h" /* the one-time heap: one_time_heap() */

/* The Landlock calls have these numbers on every architecture (older headers lack the names). */
#define R2E_LANDLOCK_CREATE_RULESET 444
#define R2E_LANDLOCK_ADD_RULE 445
#define R2E_LANDLOCK_RESTRICT_SELF 446

/* lock() turns every call of `methods` not named in `after_lock` into `refused` (an allowlist: a call added
 * later is refused once the run's set-up is over unless it is named here). The verifier locks the module once
 * a run's session is set up: a run's test reaches it (`sys.settrace.__self__`, or an import), and `dlopen` of
 * a file the test wrote would map and relocate it with no audit event (red team round 18). What stays
 * callable: arm and settrace (they only restrict), trace_here (it only starts the recorder, the verifier's,
 * in a new thread), frame_argument (it answers only the hook: hook_busy) and lock itself. */
static const char *const after_lock[] = {"arm", "settrace", "trace_here", "frame_argument", "lock", NULL};

/* What a refused call becomes: CPython reads a builtin function's C pointer from its method table at each
 * call (METH_VARARGS, METH_NOARGS and METH_O alike), so every function object of the module, made before or
 * after the lock, calls this. Its arguments are never looked at. */
static PyObject *
refused(PyObject *self, PyObject *unused)
{
    PyErr_SetString(PyExc_PermissionError,
                    "repo2rlenv verifier: _r2e_kernel refuses every set-up call once the run's set-up is over");
    return NULL;
}

static PyObject *
failed(const char *what)
{
    int err = errno;
    PyObject *msg = PyUnicode_FromString(what);
    if (msg == NULL)
        return NULL;
    PyObject *exc = PyObject_CallFunction(PyExc_OSError, "iO", err, msg);
    Py_DECREF(msg);
    if (exc != NULL) {
        PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
        Py_DECREF(exc);
    }
    return NULL;
}

/* create_ruleset(attr: bytes | None, flags: int) -> int: a ruleset fd, or the ABI version with flags=1. */
static PyObject *
create_ruleset(PyObject *self, PyObject *args)
{
    Py_buffer attr = {0};
    int has_attr = 0;
    PyObject *obj;
    unsigned int flags;
    if (!PyArg_ParseTuple(args, "OI", &obj, &flags))
        return NULL;
    if (obj != Py_None) {
        if (PyObject_GetBuffer(obj, &attr, PyBUF_SIMPLE) < 0)
            return NULL;
        has_attr = 1;
    }
    long rc = syscall(R2E_LANDLOCK_CREATE_RULESET, has_attr ? attr.buf : NULL,
                      has_attr ? (size_t)attr.len : 0, flags);
    if (has_attr)
        PyBuffer_Release(&attr);
    if (rc < 0)
        return failed("landlock_create_ruleset failed");
    return PyLong_FromLong(rc);
}

/* add_rule(ruleset: int, rule_type: int, attr: bytes) -> None */
static PyObject *
add_rule(PyObject *self, PyObject *args)
{
    int ruleset, rule_type;
    Py_buffer attr;
    if (!PyArg_ParseTuple(args, "iiy*", &ruleset, &rule_type, &attr))
        return NULL;
    long rc = syscall(R2E_LANDLOCK_ADD_RULE, ruleset, rule_type, attr.buf, 0);
    PyBuffer_Release(&attr);
    if (rc != 0)
        return failed("landlock_add_rule failed");
    Py_RETURN_NONE;
}

/* restrict_self(ruleset: int) -> None */
static PyObject *
restrict_self(PyObject *self, PyObject *args)
{
    int ruleset;
    if (!PyArg_ParseTuple(args, "i", &ruleset))
        return NULL;
    if (syscall(R2E_LANDLOCK_RESTRICT_SELF, ruleset, 0) != 0)
        return failed("landlock_restrict_self failed");
    Py_RETURN_NONE;
}

static PyObject *
no_new_privs(PyObject *self, PyObject *unused)
{
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return failed("PR_SET_NO_NEW_PRIVS failed");
    Py_RETURN_NONE;
}

/* seccomp(program: bytes) -> None: install a classic-BPF filter (8-byte instructions). */
static PyObject *
install_seccomp(PyObject *self, PyObject *args)
{
    Py_buffer prog;
    if (!PyArg_ParseTuple(args, "y*", &prog))
        return NULL;
    if (prog.len == 0 || prog.len % sizeof(struct sock_filter) != 0 ||
        prog.len / sizeof(struct sock_filter) > 0xffff) {
        PyBuffer_Release(&prog);
        PyErr_SetString(PyExc_ValueError, "a seccomp program is a whole number of 8-byte instructions");
        return NULL;
    }
    struct sock_fprog fprog = {(unsigned short)(prog.len / sizeof(struct sock_filter)),
                               (struct sock_filter *)prog.buf};
    int rc = prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog, 0, 0);
    PyBuffer_Release(&prog);
    if (rc != 0)
        return failed("seccomp filter refused");
    Py_RETURN_NONE;
}

/* set_pdeathsig(signal: int) -> None: the signal this process gets when its parent dies. */
static PyObject *
set_pdeathsig(PyObject *self, PyObject *args)
{
    int sig;
    if (!PyArg_ParseTuple(args, "i", &sig))
        return NULL;
    if (prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0) != 0)
        return failed("PR_SET_PDEATHSIG failed");
    Py_RETURN_NONE;
}

/* set_dumpable(flag: bool) -> None. A uid change clears the flag; the zygote's run sets it back so that it
 * sees /proc/self as a fresh process would. A run is dumpable already, and seccomp refuses ptrace. */
static PyObject *
set_dumpable(PyObject *self, PyObject *args)
{
    int flag;
    if (!PyArg_ParseTuple(args, "p", &flag))
        return NULL;
    if (prctl(PR_SET_DUMPABLE, flag ? 1 : 0, 0, 0, 0) != 0)
        return failed("PR_SET_DUMPABLE failed");
    Py_RETURN_NONE;
}

/* map_library(path: str, flags: int) -> None: dlopen, keeping no handle (the library stays mapped). */
static PyObject *
map_library(PyObject *self, PyObject *args)
{
    PyObject *path;
    int flags;
    if (!PyArg_ParseTuple(args, "O&i", PyUnicode_FSConverter, &path, &flags))
        return NULL;
    void *handle = dlopen(PyBytes_AS_STRING(path), flags);
    Py_DECREF(path);
    if (handle == NULL) {
        const char *why = dlerror();
        PyErr_SetString(PyExc_OSError, why ? why : "dlopen failed");
        return NULL;
    }
    Py_RETURN_NONE;
}


/* ------------------------------------------------------------------------------------ the audit hook */

static PyObject *hook_decide;    /* decide(event, args, frame) -> None, or the exception to raise */
static char **hook_events;       /* the event names decide looks at, sorted; every other returns at once */
static Py_ssize_t hook_nevents;
static char **hook_prefixes;     /* and names that start with one of these */
static Py_ssize_t hook_nprefixes;
static __thread int hook_busy;   /* this thread is inside decide */
static int hook_inside;          /* threads inside decide (they take turns holding the GIL) */
static int hook_holds_collector; /* the collector's "collecting" flag is the hook's */
static int hook_seen_check;
static int hook_armed;           /* the submission runs: see arm() */
/* The thread whose collection is running, as the hook's own gc callback last heard ("start" sets it,
 * "stop" clears it). Only a hint, for speed: the test can remove, reorder or call that callback, which
 * changes how long the hook waits for a collection, never whether it decides without the collector. */
static unsigned long collector_thread;

#define HOOK_CHECK_EVENT "repo2rlenv.hook.check"

/* ------------------------------------------------------------------ the line recorder (Python 3.11)
 *
 * On 3.11 coverage comes from tracing. A trace function written in Python is an object the test can reach
 * (a frame's `f_trace`, `sys.gettrace()`), call or wrap, and while the interpreter runs a Python trace
 * function for a 'line' event, code of the test's can move a frame's `f_lineno` (red team round 14: a class
 * as a target frame's `f_trace` whose `__new__` jumped and whose `__init__` was the recorder's own function).
 * This recorder is a C trace function: the interpreter calls it directly (no frame's `f_trace` is
 * consulted) and it runs no Python code, so no code of the test's ever runs while a 'line' event is on in
 * its thread, and 3.11 lets `f_lineno` be set only then. It keeps the lines of the target's own code
 * objects, as the interpreter computed them. Any trace function set through `sys.settrace` would give that
 * power back, even one of ours: CPython's trampoline for it hands each 'line' event to the frame's own
 * `f_trace` until its next 'call' event (red team round 15, with a `trace_thread` that replaced itself so).
 * So a `sys.settrace` event is let through only when this module raised it itself (installing the
 * recorder, or `settrace(None)`): no rule about who calls and from where, which a C callable run under the
 * right frame satisfied (round 16: doctest's runner, its `sys` global a stand-in of the test's). Threads
 * start the recorder themselves (`trace_here`, from the verifier's wrapper of threading's bootstrap). */
static PyObject *lines_own;            /* {id(code): code}: the target's own code objects (the verifier's) */
static PyObject *lines_seen;           /* the set the lines go to (the verifier's) */
static __thread int tracer_installing; /* this thread is setting its tracer itself: the sys.settrace is ours */

static int
line_event(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
    if (what != PyTrace_LINE || lines_own == NULL)
        return 0;
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyCodeObject *code = PyFrame_GetCode(frame);
    PyObject *key = PyLong_FromVoidPtr(code);  /* id(code): the dict's keys are exact ints */
    Py_DECREF(code);  /* the frame holds it */
    int own = key != NULL ? PyDict_Contains(lines_own, key) : -1;
    Py_XDECREF(key);
    if (own == 1) {
        PyObject *line = PyLong_FromLong(PyFrame_GetLineNumber(frame));
        if (line != NULL)
            PySet_Add(lines_seen, line);
        Py_XDECREF(line);
    }
    PyErr_Clear();  /* a failed allocation costs a line, never the traced code an exception */
    PyErr_Restore(type, value, traceback);
    return 0;
}

/* This thread's tracer set by this module: the recorder (`line_event`) or none. Its sys.settrace event is
 * the only one the hook lets through. sys.gettrace() is None either way: nothing to hand back to settrace. */
static int
set_own_trace(Py_tracefunc func)
{
    tracer_installing = 1;
    PyEval_SetTrace(func, NULL);
    tracer_installing = 0;
    return PyErr_Occurred() ? -1 : 0;
}

static int
compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int
watched(const char *event)
{
    if (bsearch(&event, hook_events, hook_nevents, sizeof(char *), compare_names) != NULL)
        return 1;
    for (Py_ssize_t i = 0; i < hook_nprefixes; i++)
        if (strncmp(event, hook_prefixes[i], strlen(hook_prefixes[i])) == 0)
            return 1;
    return 0;
}

/* Hold the collector: with its "collecting" flag set, no collection starts, automatic or gc.collect(), in
 * any thread (3.11 and 3.13 check the flag before starting one; 3.12's scheduled collection does not, so
 * its pending request is dropped too, and none is scheduled while the flag is set). Only when no
 * collection is running (its finalizers, its gc.callbacks included): one that is will clear the flag
 * when it ends. While the hook holds it, no code of the test's can start in a thread inside the hook. */
static int
hold_collector(PyInterpreterState *interp)
{
    if (hook_holds_collector)
        return 1;
    if (interp->gc.collecting)
        return 0;
    interp->gc.collecting = 1;
    hook_holds_collector = 1;
#if PY_VERSION_HEX >= 0x030C0000 && PY_VERSION_HEX < 0x030D0000
    _Py_atomic_store_relaxed(&interp->ceval.gc_scheduled, 0);
#endif
    return 1;
}

static int
audit(const char *event, PyObject *args, void *unused)
{
    if (!hook_seen_check && strcmp(event, HOOK_CHECK_EVENT) == 0) {
        hook_seen_check = 1;
        return 0;
    }
    if (hook_decide == NULL)
        return 0;
    /* Tracers: only this module's own (set_own_trace), decided here; every other goes to decide, which
     * refuses it. */
    if (tracer_installing && strcmp(event, "sys.settrace") == 0)
        return 0;
    if (!watched(event))
        return 0;
    PyInterpreterState *interp = PyInterpreterState_Get();
    if (hook_busy) {
        /* An event raised inside decide: its own attribute reads and the like, which it looks at itself.
         * Unless code of the test's raised it: a finalizer or gc callback (even a C one, with no frame of
         * its own) of a collection running in this thread above decide. None can start while the hook
         * holds the collector; if it could not hold it (a collection was running when decide began, or
         * is now), the event is refused. (A collection's bookkeeping cannot tell which one runs: its
         * count moves before its "stop" callbacks, red team round 11.) */
        if (hold_collector(interp))
            return 0;
        PyErr_SetString(PyExc_PermissionError,
                        "repo2rlenv verifier: code the garbage collector ran inside the audit hook is refused");
        return -1;
    }
    /* A collection is running (another thread's, paused in a finalizer or gc callback; or this thread's,
     * whose finalizer or callback raised this event): give it up to 10 ms to end. Once the submission runs,
     * decide never runs without the collector held: that collection could end meanwhile and this thread's
     * next allocation start one whose callbacks run the test's code above decide's frames, which it can
     * reach with no audited step (a generator's frame fetched earlier: red team round 13). So the event is
     * refused then: a finalizer's or gc callback's event during a collection, or one raised while another
     * thread's collection stays paused for 10 ms. */
    int held = hold_collector(interp);
    /* This thread's own collection cannot end while the hook waits above it: no wait then. */
    int mine = collector_thread == PyThread_get_thread_ident();
    for (int i = 0; i < 100 && !held && !mine; i++) {
        Py_BEGIN_ALLOW_THREADS
        usleep(100);
        Py_END_ALLOW_THREADS
        held = hold_collector(interp);
    }
    if (!held && hook_armed) {
        PyErr_Format(PyExc_PermissionError,
                     "repo2rlenv verifier: %.100s refused: raised while a garbage collection runs (in a "
                     "finalizer or gc callback, or another thread's collection did not end)", event);
        return -1;
    }
    hook_busy = 1;
    hook_inside++;
    /* The frame that raised the event (borrowed): decide never looks up frames itself. */
    PyObject *frame = (PyObject *)PyEval_GetFrame();
    PyObject *name = PyUnicode_FromString(event);
    PyObject *result = NULL;
    /* No tracer or profiler sees decide's frames (a test's tracer, set through threading's bootstrap, would
     * get them as arguments): CPython does the same around the hooks written in Python, not around C ones. */
    PyThreadState *tstate = PyThreadState_Get();
    PyThreadState_EnterTracing(tstate);
    if (name != NULL)
        result = PyObject_CallFunctionObjArgs(hook_decide, name, args, frame ? frame : Py_None, NULL);
    PyThreadState_LeaveTracing(tstate);
    Py_XDECREF(name);
    hook_inside--;
    if (hook_inside == 0 && hook_holds_collector) {
        interp->gc.collecting = 0;
        hook_holds_collector = 0;
    }
    hook_busy = 0;
    /* decide returns the verdict, or (verdict, what its checks took out of the test's world): that goes
     * only now, the hook no longer inside, so a finalizer or weakref callback its release runs is any
     * code's (another thread can make the checks' reference the last one: red team round 12). */
    PyObject *verdict = result;
    if (result != NULL && PyTuple_CheckExact(result) && PyTuple_GET_SIZE(result) == 2) {
        verdict = Py_NewRef(PyTuple_GET_ITEM(result, 0));
        Py_DECREF(result);  /* and with it what the checks took */
    }
    if (verdict == NULL) {
        /* decide never raises: this is a call that could not run (the stack at its limit, no memory). */
        PyErr_Clear();
        PyErr_Format(PyExc_PermissionError,
                     "repo2rlenv verifier: %.100s refused (the audit hook could not run)", event);
        return -1;
    }
    if (verdict == Py_None) {
        Py_DECREF(verdict);
        return 0;
    }
    if (PyExceptionInstance_Check(verdict))
        PyErr_SetObject((PyObject *)Py_TYPE(verdict), verdict);
    else
        PyErr_Format(PyExc_PermissionError, "repo2rlenv verifier: %.100s refused", event);
    Py_DECREF(verdict);
    return -1;
}

static char **
c_names(PyObject *seq, Py_ssize_t *count)
{
    PyObject *fast = PySequence_Fast(seq, "a sequence of str");
    if (fast == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    char **out = calloc(n + 1, sizeof(char *));
    for (Py_ssize_t i = 0; out != NULL && i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(fast, i);
        const char *text = PyUnicode_Check(item) ? PyUnicode_AsUTF8(item) : NULL;
        if (text == NULL || (out[i] = strdup(text)) == NULL) {
            for (Py_ssize_t j = 0; j < i; j++)
                free(out[j]);
            free(out);
            out = NULL;
        }
    }
    Py_DECREF(fast);
    if (out == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "event names must be str");
        return NULL;
    }
    *count = n;
    return out;
}

/* The hook's gc callback (put first in gc.callbacks by audit_hook): which thread's collection runs. */
static PyObject *
collection_phase(PyObject *self, PyObject *args)
{
    PyObject *phase, *info;
    if (!PyArg_ParseTuple(args, "OO", &phase, &info))
        return NULL;
    int start = PyUnicode_CheckExact(phase) && PyUnicode_CompareWithASCIIString(phase, "start") == 0;
    collector_thread = start ? PyThread_get_thread_ident() : 0;
    Py_RETURN_NONE;
}

static PyMethodDef collection_phase_def = {"r2e_collection_phase", collection_phase, METH_VARARGS,
                                           "the verifier's note of which thread collects"};

static int
watch_collections(void)
{
    PyObject *gc = PyImport_ImportModule("gc");
    PyObject *callbacks = gc ? PyObject_GetAttrString(gc, "callbacks") : NULL;
    PyObject *fn = callbacks ? PyCFunction_New(&collection_phase_def, NULL) : NULL;
    int rc = (fn != NULL && PyList_Check(callbacks)) ? PyList_Insert(callbacks, 0, fn) : -1;
    Py_XDECREF(fn);
    Py_XDECREF(callbacks);
    Py_XDECREF(gc);
    if (rc < 0 && !PyErr_Occurred())
        PyErr_SetString(PyExc_RuntimeError, "gc.callbacks is not a list");
    return rc;
}

/* audit_hook(decide, events, prefixes) -> None: install the hook, once per process. `decide(event, args,
 * frame)` is called for each event named in `events` or starting with one of `prefixes`, with the frame
 * that raised it; it returns None or the exception to raise (or a pair: that, and objects to release once
 * the hook has let go), and must not raise itself. */
static PyObject *
audit_hook(PyObject *self, PyObject *args)
{
    PyObject *decide, *events, *prefixes;
    if (!PyArg_ParseTuple(args, "OOO", &decide, &events, &prefixes))
        return NULL;
    if (hook_decide != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "the audit hook is installed already");
        return NULL;
    }
    if (!PyCallable_Check(decide)) {
        PyErr_SetString(PyExc_TypeError, "decide must be callable");
        return NULL;
    }
    Py_ssize_t nevents, nprefixes;
    char **names = c_names(events, &nevents);
    if (names == NULL)
        return NULL;
    char **starts = c_names(prefixes, &nprefixes);
    if (starts == NULL)
        return NULL;
    qsort(names, nevents, sizeof(char *), compare_names);
    hook_events = names;
    hook_nevents = nevents;
    hook_prefixes = starts;
    hook_nprefixes = nprefixes;
    if (watch_collections() < 0)
        return NULL;
    Py_INCREF(decide);
    hook_decide = decide;
    /* A hook already there may veto this one silently: a private event proves it is in place. */
    if (PySys_AddAuditHook(audit, NULL) < 0 || PySys_Audit(HOOK_CHECK_EVENT, NULL) < 0 || !hook_seen_check) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_RuntimeError, "the audit hook could not be installed");
        return NULL;
    }
    Py_RETURN_NONE;
}

/* arm() -> None: from now on no event is decided without the collector held (the verifier calls it when
 * the submission's module starts; before that no code of the test's has run). It only restricts. */
static PyObject *
arm(PyObject *self, PyObject *unused)
{
    hook_armed = 1;
    Py_RETURN_NONE;
}

/* frame_argument(frame, index) -> object | None: a frame's local slot `index` (its arguments come first),
 * as it is now; None when the slot is empty or out of range. Read from the frame's slots, not f_locals
 * (which writes the frame's locals dict and can drop an object's last reference). The hook asks it of the
 * import system's frames before marshal loads: the buffer `_compile_bytecode` was given must be immutable
 * bytes (what the hook compared with a real .pyc must be what marshal reads; a bytearray can be rewritten
 * by another thread meanwhile), and the frozen chain must be calling the real `_imp.get_frozen_object`.
 * A frame's locals are no secret of the hook's: f_locals hands them to whoever holds the frame. */
static PyObject *
frame_argument(PyObject *self, PyObject *args)
{
    PyObject *frame;
    int index;
    if (!PyArg_ParseTuple(args, "O!i", &PyFrame_Type, &frame, &index))
        return NULL;
    if (!hook_busy) {
        /* Only decide asks (inside the hook); a run's test reaches this module too. */
        PyErr_SetString(PyExc_PermissionError, "repo2rlenv verifier: _r2e_kernel.frame_argument answers only the hook");
        return NULL;
    }
    PyCodeObject *code = PyFrame_GetCode((PyFrameObject *)frame);
    int nlocals = code->co_nlocals;
    Py_DECREF(code);
    PyObject *value = NULL;
    if (index >= 0 && index < nlocals)
        value = ((PyFrameObject *)frame)->f_frame->localsplus[index];
    if (value == NULL)
        Py_RETURN_NONE;
    return Py_NewRef(value);
}

/* record_lines(own, lines) -> None: start the line recorder in this thread, once per process: the line of
 * each 'line' event of a frame whose code's id is a key of `own` goes into `lines`. Threads start it with
 * trace_here. */
static PyObject *
record_lines(PyObject *self, PyObject *args)
{
    PyObject *own, *lines;
    if (!PyArg_ParseTuple(args, "O!O!", &PyDict_Type, &own, &PySet_Type, &lines))
        return NULL;
    if (lines_own != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "the line recorder is started already");
        return NULL;
    }
    lines_own = Py_NewRef(own);
    lines_seen = Py_NewRef(lines);
    if (set_own_trace(line_event) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* trace_here() -> None: the recorder, once started, in this thread too (the verifier's wrapper of
 * threading's bootstrap calls it first in every new thread); it only ever installs the recorder. */
static PyObject *
trace_here(PyObject *self, PyObject *unused)
{
    if (lines_own != NULL && set_own_trace(line_event) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* settrace(tracer) -> None: what the verifier makes `sys.settrace` in a run. None switches tracing off in
 * this thread (doctest's runner does so around its examples, and puts back what sys.gettrace() gave it:
 * None, the recorder being C); anything else is refused, as the hook would refuse sys.settrace's event. */
static PyObject *
settrace(PyObject *self, PyObject *tracer)
{
    if (tracer != Py_None) {
        PyErr_SetString(PyExc_PermissionError,
                        "repo2rlenv verifier: sys.settrace (tracing or profiling) refused");
        return NULL;
    }
    if (set_own_trace(NULL) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------------------------------------------
 * C code that runs the test's code while it holds raw state. An audit hook sees nothing of memory, and
 * some of CPython's C functions call back into Python (a value's __index__ or __float__, an iterator, a
 * file's write) in the middle of writing into or reading from a buffer they measured before the call: the
 * callback shrinks the buffer and the C code writes or reads past its end (red team round 19: array's
 * item assignment, CPython gh-142555, made a bytearray read any address, and with it the target's
 * bytecode). harden_array(array_type) makes every such entry point of `array.array` take only values no
 * conversion method of the test's can run for (int, bool, float, str), or reads its argument out first:
 * item assignment (both slots, and `__setitem__`), append, insert, extend, fromlist and tofile. A fresh
 * array type (the module created again) would not be hardened: guard_imports(_imp) refuses creating the
 * array module, or `_imp` itself, again. Both are set-up calls: refused once the run is locked. */

static PyObject *array_type;            /* the hardened type */
static objobjargproc array_ass_subscript;
static ssizeobjargproc array_ass_item;
enum { A_APPEND, A_INSERT, A_EXTEND, A_FROMLIST, A_TOFILE, A_SETITEM, A_COUNT };
static const char *const array_names[A_COUNT] = {"append", "insert", "extend", "fromlist", "tofile", "__setitem__"};
static PyObject *array_original[A_COUNT];

/* A type's own dict (a new reference). From 3.12 a static builtin type (bytearray, memoryview) keeps it in
 * the interpreter's state and its tp_dict is NULL. */
static PyObject *
type_dict(PyTypeObject *type)
{
#if PY_VERSION_HEX >= 0x030C0000
    return PyType_GetDict(type);
#else
    return Py_XNewRef(type->tp_dict);
#endif
}

/* `def` as the method of that name in `type`'s dict: what a Python lookup (`type.name`, a subclass's
 * `super()`) finds instead of the descriptor that holds the original C function. */
static int
set_method(PyTypeObject *type, PyMethodDef *def)
{
    PyObject *descr = PyDescr_NewMethod(type, def), *dict = type_dict(type);
    int rc = descr == NULL || dict == NULL ? -1 : PyDict_SetItemString(dict, def->ml_name, descr);
    Py_XDECREF(descr);
    Py_XDECREF(dict);
    PyType_Modified(type);
    return rc;
}

/* A value whose conversion to an array item runs no Python code (bool cannot be subclassed). */
static int
plain_item(PyObject *v)
{
    if (v == NULL || PyLong_CheckExact(v) || PyBool_Check(v) || PyFloat_CheckExact(v) || PyUnicode_CheckExact(v))
        return 1;
    PyErr_Format(PyExc_TypeError,
                 "repo2rlenv verifier: an array item must be an int, float or str in a graded run, not %.100s "
                 "(its conversion would run inside array's C code)", Py_TYPE(v)->tp_name);
    return 0;
}

static int
hardened_ass_subscript(PyObject *self, PyObject *key, PyObject *value)
{
    return plain_item(value) ? array_ass_subscript(self, key, value) : -1;
}

static int
hardened_ass_item(PyObject *self, Py_ssize_t i, PyObject *value)
{
    return plain_item(value) ? array_ass_item(self, i, value) : -1;
}

static PyObject *
call_original(int which, PyObject *self, PyObject *a, PyObject *b)
{
    return PyObject_CallFunctionObjArgs(array_original[which], self, a, b, NULL);
}

/* A list of plain items: the items of `seq` (any iterable; its own code runs now, before array's). */
static PyObject *
plain_list(PyObject *seq)
{
    PyObject *list = PySequence_List(seq);
    if (list == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); i++)
        if (!plain_item(PyList_GET_ITEM(list, i))) {
            Py_DECREF(list);
            return NULL;
        }
    return list;
}

static PyObject *
hardened_append(PyObject *self, PyObject *v)
{
    return plain_item(v) ? call_original(A_APPEND, self, v, NULL) : NULL;
}

static PyObject *
hardened_insert(PyObject *self, PyObject *args)
{
    PyObject *i, *v;
    if (!PyArg_UnpackTuple(args, "insert", 2, 2, &i, &v) || !plain_item(v))
        return NULL;
    return call_original(A_INSERT, self, i, v);
}

static PyObject *
hardened_from(int which, PyObject *self, PyObject *items)
{
    if (which == A_EXTEND && PyObject_TypeCheck(items, (PyTypeObject *)array_type))
        return call_original(which, self, items, NULL);
    if (which == A_FROMLIST && !PyList_Check(items))
        return call_original(which, self, items, NULL);  /* its own TypeError, before any item is read */
    PyObject *list = plain_list(items);
    if (list == NULL)
        return NULL;
    PyObject *out = call_original(which, self, list, NULL);
    Py_DECREF(list);
    return out;
}

static PyObject *
hardened_extend(PyObject *self, PyObject *items)
{
    return hardened_from(A_EXTEND, self, items);
}

static PyObject *
hardened_fromlist(PyObject *self, PyObject *items)
{
    return hardened_from(A_FROMLIST, self, items);
}

/* tofile(f): the array's bytes, copied first, in one write (array writes 64 KiB blocks of a size it measured
 * once, calling f.write between them). */
static PyObject *
hardened_tofile(PyObject *self, PyObject *f)
{
    PyObject *data = PyObject_CallMethod(self, "tobytes", NULL);
    if (data == NULL)
        return NULL;
    PyObject *out = Py_None;
    Py_INCREF(out);
    if (PyBytes_Check(data) && PyBytes_GET_SIZE(data) > 0) {
        Py_DECREF(out);
        out = PyObject_CallMethod(f, "write", "O", data);
        if (out != NULL) {
            Py_DECREF(out);
            out = Py_NewRef(Py_None);
        }
    }
    Py_DECREF(data);
    return out;
}

static PyObject *
hardened_setitem(PyObject *self, PyObject *args)
{
    PyObject *key, *value;
    if (!PyArg_UnpackTuple(args, "__setitem__", 2, 2, &key, &value))
        return NULL;
    if (hardened_ass_subscript(self, key, value) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef array_hardened[A_COUNT] = {
    {"append", hardened_append, METH_O, "append(v): an int, float or str item (repo2rlenv verifier)"},
    {"insert", hardened_insert, METH_VARARGS, "insert(i, v): an int, float or str item (repo2rlenv verifier)"},
    {"extend", hardened_extend, METH_O, "extend(iterable): its items read out first (repo2rlenv verifier)"},
    {"fromlist", hardened_fromlist, METH_O, "fromlist(list): its items read out first (repo2rlenv verifier)"},
    {"tofile", hardened_tofile, METH_O, "tofile(f): the bytes copied first (repo2rlenv verifier)"},
    {"__setitem__", hardened_setitem, METH_VARARGS, "self[key] = value (repo2rlenv verifier)"},
};

/* harden_array(array.array) -> None: once per process. */
static PyObject *
harden_array(PyObject *self, PyObject *type)
{
    if (array_type != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "array is hardened already");
        return NULL;
    }
    PyTypeObject *t = (PyTypeObject *)type;
    if (!PyType_Check(type) || !(t->tp_flags & Py_TPFLAGS_HEAPTYPE) || t->tp_as_mapping == NULL ||
        t->tp_as_sequence == NULL || t->tp_as_mapping->mp_ass_subscript == NULL ||
        t->tp_as_sequence->sq_ass_item == NULL || strcmp(t->tp_name, "array.array") != 0) {
        PyErr_SetString(PyExc_TypeError, "harden_array takes array.array");
        return NULL;
    }
    PyObject *dict = t->tp_dict;
    for (int i = 0; i < A_COUNT; i++) {
        PyObject *found = PyDict_GetItemString(dict, array_names[i]);  /* borrowed */
        if (found == NULL) {
            PyErr_Format(PyExc_TypeError, "array.array has no %s", array_names[i]);
            return NULL;
        }
        array_original[i] = Py_NewRef(found);
    }
    for (int i = 0; i < A_COUNT; i++)
        if (set_method(t, &array_hardened[i]) < 0)
            return NULL;
    array_ass_subscript = t->tp_as_mapping->mp_ass_subscript;
    array_ass_item = t->tp_as_sequence->sq_ass_item;
    t->tp_as_mapping->mp_ass_subscript = hardened_ass_subscript;
    t->tp_as_sequence->sq_ass_item = hardened_ass_item;
    PyType_Modified(t);
    array_type = Py_NewRef(type);
    Py_RETURN_NONE;
}

/* The import system's creators of extension modules, guarded: the array module (whose new type would not be
 * hardened) and `_imp` (whose new copy would hold the unguarded creators) are not created again. Each is
 * handed a spec of its own with the name it was checked for (a spec's `name` could change between reads). */
static PyObject *imp_original[2];
static const char *const refused_modules[] = {"array", "_imp", "_io", "_pickle", "itertools", "mmap", "_sqlite3",
                                              "_struct", "pyexpat", "_elementtree", "_collections", "_json",
                                              "_asyncio", "_warnings", "faulthandler", NULL};

static PyObject *
guarded_create(int which, PyObject *args)
{
    PyObject *spec, *file = NULL;
    if (!PyArg_UnpackTuple(args, which ? "create_dynamic" : "create_builtin", 1, 2, &spec, &file))
        return NULL;
    PyObject *name = PyObject_GetAttrString(spec, "name");
    if (name == NULL)
        return NULL;
    if (!PyUnicode_CheckExact(name)) {
        Py_DECREF(name);
        PyErr_SetString(PyExc_TypeError, "repo2rlenv verifier: a module spec's name must be a str");
        return NULL;
    }
    Py_ssize_t length = PyUnicode_GetLength(name);
    Py_ssize_t dot = PyUnicode_FindChar(name, '.', 0, length, -1);
    PyObject *last = dot >= 0 ? PyUnicode_Substring(name, dot + 1, length) : Py_NewRef(name);
    int refused = 0;
    for (const char *const *m = refused_modules; last != NULL && *m != NULL; m++)
        refused |= PyUnicode_CompareWithASCIIString(last, *m) == 0;
    Py_XDECREF(last);
    if (last == NULL || refused) {
        if (refused)
            PyErr_Format(PyExc_ImportError, "repo2rlenv verifier: creating the module %U again is refused", name);
        Py_DECREF(name);
        return NULL;
    }
    PyObject *origin = PyObject_GetAttrString(spec, "origin");
    if (origin == NULL) {
        Py_DECREF(name);
        return NULL;
    }
    PyObject *fresh = NULL;
    PyObject *kwargs = Py_BuildValue("{sOsO}", "name", name, "origin", origin);
    PyObject *empty = PyTuple_New(0);
    PyObject *namespace = PySys_GetObject("implementation");  /* borrowed: a types.SimpleNamespace */
    if (kwargs != NULL && empty != NULL && namespace != NULL)
        fresh = PyObject_Call((PyObject *)Py_TYPE(namespace), empty, kwargs);
    Py_XDECREF(kwargs);
    Py_XDECREF(empty);
    Py_DECREF(origin);
    Py_DECREF(name);
    if (fresh == NULL)
        return NULL;
    PyObject *out = PyObject_CallFunctionObjArgs(imp_original[which], fresh, file, NULL);
    Py_DECREF(fresh);
    return out;
}

static PyObject *
guarded_create_builtin(PyObject *self, PyObject *args)
{
    return guarded_create(0, args);
}

static PyObject *
guarded_create_dynamic(PyObject *self, PyObject *args)
{
    return guarded_create(1, args);
}

static PyMethodDef imp_guarded[2] = {
    {"create_builtin", guarded_create_builtin, METH_VARARGS, "create a built-in module (repo2rlenv verifier)"},
    {"create_dynamic", guarded_create_dynamic, METH_VARARGS, "create an extension module (repo2rlenv verifier)"},
};

/* guard_imports(_imp) -> None: once per process. */
static PyObject *
guard_imports(PyObject *self, PyObject *imp)
{
    if (imp_original[0] != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "the import creators are guarded already");
        return NULL;
    }
    if (!PyModule_Check(imp) || strcmp(PyModule_GetName(imp) ? PyModule_GetName(imp) : "", "_imp") != 0) {
        PyErr_Clear();
        PyErr_SetString(PyExc_TypeError, "guard_imports takes the _imp module");
        return NULL;
    }
    PyObject *found[2];
    for (int i = 0; i < 2; i++) {
        found[i] = PyObject_GetAttrString(imp, imp_guarded[i].ml_name);
        if (found[i] == NULL) {
            Py_XDECREF(found[0]);
            return NULL;
        }
    }
    for (int i = 0; i < 2; i++) {
        PyObject *fn = PyCFunction_New(&imp_guarded[i], NULL);
        if (fn == NULL || PyObject_SetAttrString(imp, imp_guarded[i].ml_name, fn) < 0) {
            Py_XDECREF(fn);
            return NULL;
        }
        Py_DECREF(fn);
        imp_original[i] = found[i];
    }
    Py_RETURN_NONE;
}

/* Red team round 20: C code that hands the test's code a memoryview with no owner, over memory the C code
 * frees later (CPython gh-60198): a buffered reader's `raw.readinto(view)` of its own buffer (a view kept by
 * the test outlived the reader: a freed block refilled by an empty bytearray's header, its length raised
 * through the view, read any address), the unpickler's `file.readinto(view)` of a new bytes object, a
 * buffered writer's `raw.write(view)`. Every raw stream a buffered reader, writer or random-access file is
 * given, and every file an unpickler reads, is seen through a CopyingStream: its readinto and write go
 * through buffers the stream's own code owns (copied in and out), everything else is the stream's own
 * attribute. FileIO needs none (its readinto is C). And itertools.pairwise's next, re-entered from its
 * iterator (CPython gh-109786, 3.11.2: the pair's first item freed while held), is refused. */

typedef struct {
    PyObject_HEAD
    PyObject *stream;
} CopyingStream;

static PyTypeObject CopyingStream_Type;

static PyObject *
copying_wrap(PyObject *stream)
{
    CopyingStream *self = PyObject_New(CopyingStream, &CopyingStream_Type);
    if (self != NULL)
        self->stream = Py_NewRef(stream);
    return (PyObject *)self;
}

static void
copying_dealloc(CopyingStream *self)
{
    Py_XDECREF(self->stream);
    PyObject_Free(self);
}

/* readinto(view): the stream reads into a view of a bytearray of its own; what it says it read is copied into
 * view. (A view the stream keeps holds that bytearray, never the caller's memory.) */
static PyObject *
copying_readinto(CopyingStream *self, PyObject *view)
{
    Py_buffer buf;
    if (PyObject_GetBuffer(view, &buf, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    PyObject *own = PyByteArray_FromStringAndSize(NULL, buf.len);
    /* A memoryview, as the stream would have had (some call its cast or nbytes), over a bytearray it owns. */
    PyObject *window = own != NULL ? PyMemoryView_FromObject(own) : NULL;
    PyObject *got = window != NULL ? PyObject_CallMethod(self->stream, "readinto", "O", window) : NULL;
    Py_XDECREF(window);
    if (got != NULL && got != Py_None) {
        Py_ssize_t n = PyNumber_AsSsize_t(got, PyExc_OverflowError);
        if (n == -1 && PyErr_Occurred()) {
            Py_CLEAR(got);
        } else if (n >= 0 && n <= buf.len) {
            /* The test may have resized its bytearray meanwhile: copy what is there, zeros for the rest. */
            Py_ssize_t have = PyByteArray_GET_SIZE(own) < n ? PyByteArray_GET_SIZE(own) : n;
            memcpy(buf.buf, PyByteArray_AS_STRING(own), (size_t)have);
            memset((char *)buf.buf + have, 0, (size_t)(n - have));
        }
    }
    Py_XDECREF(own);
    PyBuffer_Release(&buf);
    return got;
}

/* write(view): the stream is given bytes, a copy. */
static PyObject *
copying_write(CopyingStream *self, PyObject *view)
{
    Py_buffer buf;
    if (PyObject_GetBuffer(view, &buf, PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    PyObject *data = PyBytes_FromStringAndSize(buf.buf, buf.len);
    PyBuffer_Release(&buf);
    if (data == NULL)
        return NULL;
    PyObject *out = PyObject_CallMethod(self->stream, "write", "O", data);
    Py_DECREF(data);
    return out;
}

static PyObject *
copying_getattro(CopyingStream *self, PyObject *name)
{
    PyObject *own = PyObject_GenericGetAttr((PyObject *)self, name);
    if (own != NULL || !PyErr_ExceptionMatches(PyExc_AttributeError))
        return own;
    PyErr_Clear();
    return PyObject_GetAttr(self->stream, name);
}

static int
copying_setattro(CopyingStream *self, PyObject *name, PyObject *value)
{
    return PyObject_SetAttr(self->stream, name, value);
}

static PyMethodDef copying_methods[] = {
    {"readinto", (PyCFunction)copying_readinto, METH_O, "the stream's readinto, through a buffer of its own"},
    {"write", (PyCFunction)copying_write, METH_O, "the stream's write, of a copy"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject CopyingStream_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_r2e_kernel.CopyingStream",
    .tp_basicsize = sizeof(CopyingStream),
    .tp_dealloc = (destructor)copying_dealloc,
    .tp_getattro = (getattrofunc)copying_getattro,
    .tp_setattro = (setattrofunc)copying_setattro,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "a stream whose readinto and write go through buffers of their own (repo2rlenv verifier)",
    .tp_methods = copying_methods,
};

/* The first argument (or keyword `keyword`) of a call, wrapped unless it is exactly `direct` (FileIO). */
static PyObject *file_io_type;

static int
wrap_first(PyObject **args, PyObject **kwds, const char *keyword)
{
    PyObject *stream = NULL;
    int in_args = PyTuple_GET_SIZE(*args) > 0;
    if (in_args)
        stream = PyTuple_GET_ITEM(*args, 0);
    else if (*kwds != NULL)
        stream = PyDict_GetItemString(*kwds, keyword);  /* borrowed */
    if (stream == NULL || (file_io_type != NULL && Py_IS_TYPE(stream, (PyTypeObject *)file_io_type)) ||
        Py_IS_TYPE(stream, &CopyingStream_Type)) {
        Py_INCREF(*args);
        Py_XINCREF(*kwds);
        return 0;
    }
    PyObject *wrapped = copying_wrap(stream);
    if (wrapped == NULL)
        return -1;
    if (in_args) {
        Py_ssize_t n = PyTuple_GET_SIZE(*args);
        PyObject *copy = PyTuple_New(n);  /* a new tuple: the caller's is never changed */
        if (copy == NULL) {
            Py_DECREF(wrapped);
            return -1;
        }
        PyTuple_SET_ITEM(copy, 0, wrapped);
        for (Py_ssize_t i = 1; i < n; i++)
            PyTuple_SET_ITEM(copy, i, Py_NewRef(PyTuple_GET_ITEM(*args, i)));
        *args = copy;
        Py_XINCREF(*kwds);
    } else {
        PyObject *copy = PyDict_Copy(*kwds);
        if (copy == NULL || PyDict_SetItemString(copy, keyword, wrapped) < 0) {
            Py_XDECREF(copy);
            Py_DECREF(wrapped);
            return -1;
        }
        Py_DECREF(wrapped);
        Py_INCREF(*args);
        *kwds = copy;
    }
    return 0;
}

/* Types whose __init__ takes a stream first: the buffered reader, writer and random-access file, and the
 * unpickler. Each original init, by type. */
#define STREAM_TYPES 4
static PyTypeObject *stream_types[STREAM_TYPES];
static initproc stream_inits[STREAM_TYPES];
static const char *const stream_keywords[STREAM_TYPES] = {"raw", "raw", "raw", "file"};

/* Whether `self`'s init ran before: its own C __sizeof__ (the base type's, not an override) counts the buffer
 * or memo that init allocates. A second init frees them, and from inside the stream's own callbacks (a raw
 * read, seek or write the object is in the middle of) that is a use after free. */
static int
initialised_before(PyTypeObject *type, PyObject *self)
{
    PyObject *sizeof_ = PyDict_GetItemString(type->tp_dict, "__sizeof__");  /* borrowed */
    PyObject *size = sizeof_ != NULL ? PyObject_CallOneArg(sizeof_, self) : NULL;
    if (size == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "repo2rlenv verifier: a stream type without __sizeof__");
        return -1;
    }
    Py_ssize_t n = PyLong_CheckExact(size) ? PyLong_AsSsize_t(size) : -1;
    Py_DECREF(size);
    if (n < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "repo2rlenv verifier: a stream's size is not an int");
        return -1;
    }
    return n > Py_TYPE(self)->tp_basicsize;  /* __sizeof__ starts from the instance's own type (a subclass's is larger) */
}

static int
hardened_stream_init(PyObject *self, PyObject *args, PyObject *kwds)
{
    for (int i = 0; i < STREAM_TYPES; i++) {
        if (stream_types[i] == NULL || !PyObject_TypeCheck(self, stream_types[i]))
            continue;
        int before = initialised_before(stream_types[i], self);
        if (before != 0) {
            if (before > 0)
                PyErr_Format(PyExc_RuntimeError, "repo2rlenv verifier: a %s is initialised once in a graded run",
                             stream_types[i]->tp_name);
            return -1;
        }
        if (wrap_first(&args, &kwds, stream_keywords[i]) < 0)
            return -1;
        int rc = stream_inits[i](self, args, kwds);
        Py_DECREF(args);
        Py_XDECREF(kwds);
        return rc;
    }
    PyErr_SetString(PyExc_TypeError, "repo2rlenv verifier: not a stream type");
    return -1;
}

static PyObject *
hardened_stream_init_method(PyObject *self, PyObject *args, PyObject *kwds)
{
    if (hardened_stream_init(self, args, kwds) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef stream_init_def = {"__init__", (PyCFunction)(void (*)(void))hardened_stream_init_method,
                                      METH_VARARGS | METH_KEYWORDS, "the stream seen through a CopyingStream"};

static PyObject *pickle_load_original;

static PyObject *
hardened_pickle_load(PyObject *self, PyObject *args, PyObject *kwds)
{
    if (wrap_first(&args, &kwds, "file") < 0)
        return NULL;
    PyObject *out = PyObject_Call(pickle_load_original, args, kwds);
    Py_DECREF(args);
    Py_XDECREF(kwds);
    return out;
}

static PyMethodDef pickle_load_def = {"load", (PyCFunction)(void (*)(void))hardened_pickle_load,
                                      METH_VARARGS | METH_KEYWORDS, "pickle.load of a CopyingStream"};

/* itertools.pairwise: next refused while the same object's next runs (in any thread). */
static PyTypeObject *pairwise_type;
static iternextfunc pairwise_next;
#define PAIRWISE_ACTIVE 64
static PyObject *pairwise_active[PAIRWISE_ACTIVE];

static PyObject *
hardened_pairwise_next(PyObject *self)
{
    int free_slot = -1;
    for (int i = 0; i < PAIRWISE_ACTIVE; i++) {
        if (pairwise_active[i] == self) {
            PyErr_SetString(PyExc_RuntimeError, "repo2rlenv verifier: itertools.pairwise re-entered");
            return NULL;
        }
        if (pairwise_active[i] == NULL && free_slot < 0)
            free_slot = i;
    }
    if (free_slot < 0) {
        PyErr_SetString(PyExc_RuntimeError, "repo2rlenv verifier: too many itertools.pairwise running at once");
        return NULL;
    }
    pairwise_active[free_slot] = self;
    PyObject *out = pairwise_next(self);
    pairwise_active[free_slot] = NULL;
    return out;
}

static PyObject *
hardened_pairwise_next_method(PyObject *self, PyObject *unused)
{
    PyObject *out = hardened_pairwise_next(self);
    if (out == NULL && !PyErr_Occurred())
        PyErr_SetNone(PyExc_StopIteration);
    return out;
}

static PyMethodDef pairwise_next_def = {"__next__", hardened_pairwise_next_method, METH_NOARGS,
                                        "next, refused when re-entered (repo2rlenv verifier)"};

/* harden_streams(FileIO, BufferedReader, BufferedWriter, BufferedRandom, _pickle module, pairwise) -> None,
 * once per process. */
static PyObject *
harden_streams(PyObject *self, PyObject *args)
{
    PyObject *fileio, *reader, *writer, *random, *pickle, *pairwise;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!O!", &PyType_Type, &fileio, &PyType_Type, &reader, &PyType_Type, &writer,
                          &PyType_Type, &random, &PyModule_Type, &pickle, &PyType_Type, &pairwise))
        return NULL;
    if (file_io_type != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "the streams are hardened already");
        return NULL;
    }
    if (PyType_Ready(&CopyingStream_Type) < 0)
        return NULL;
    PyObject *unpickler = PyObject_GetAttrString(pickle, "Unpickler");
    PyObject *load = PyObject_GetAttrString(pickle, "load");
    if (unpickler == NULL || load == NULL || !PyType_Check(unpickler) || !PyCFunction_Check(load)) {
        Py_XDECREF(unpickler);
        Py_XDECREF(load);
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "harden_streams takes the _pickle module");
        return NULL;
    }
    PyTypeObject *types[STREAM_TYPES] = {(PyTypeObject *)reader, (PyTypeObject *)writer, (PyTypeObject *)random,
                                         (PyTypeObject *)unpickler};
    for (int i = 0; i < STREAM_TYPES; i++) {
        if (types[i]->tp_init == NULL || types[i]->tp_init == hardened_stream_init) {
            PyErr_Format(PyExc_TypeError, "%s has no init of its own", types[i]->tp_name);
            return NULL;
        }
        stream_types[i] = types[i];
        stream_inits[i] = types[i]->tp_init;
        types[i]->tp_init = hardened_stream_init;
        if (set_method(types[i], &stream_init_def) < 0)
            return NULL;
    }
    Py_DECREF(unpickler);  /* the module holds it */
    pickle_load_original = load;
    PyObject *hardened_load = PyCFunction_NewEx(&pickle_load_def, NULL, NULL);
    if (hardened_load == NULL || PyObject_SetAttrString(pickle, "load", hardened_load) < 0) {
        Py_XDECREF(hardened_load);
        return NULL;
    }
    PyObject *modules = PySys_GetObject("modules");  /* borrowed */
    PyObject *front = modules != NULL ? PyDict_GetItemString(modules, "pickle") : NULL;
    if (front != NULL && PyObject_SetAttrString(front, "load", hardened_load) < 0) {
        Py_DECREF(hardened_load);
        return NULL;
    }
    Py_DECREF(hardened_load);
    pairwise_type = (PyTypeObject *)pairwise;
    pairwise_next = pairwise_type->tp_iternext;
    if (pairwise_next == NULL || strcmp(pairwise_type->tp_name, "itertools.pairwise") != 0) {
        PyErr_SetString(PyExc_TypeError, "harden_streams takes itertools.pairwise");
        return NULL;
    }
    pairwise_type->tp_iternext = hardened_pairwise_next;
    if (set_method(pairwise_type, &pairwise_next_def) < 0)
        return NULL;
    file_io_type = Py_NewRef(fileio);
    Py_RETURN_NONE;
}

/* Round 20's open rows and their kin: C methods that measure their own object's memory, then convert an
 * argument (running the test's code), then use what they measured. bytearray's find family and `in` read
 * the freed buffer after a start's `__index__` (3.11) or a `__buffer__` (3.13) emptied it, as do join (3.11:
 * a list subclass's `__iter__`), split (3.13) and `%` (the arguments' `__bytes__`, `__index__`, ...: the
 * format is the buffer). mmap's indexing, find, read, write, move, ... read and write a mapping the
 * test's `__index__` closed (3.11.2, gh-103987: the data pointer is NULL and the size kept, so an index is
 * an address: a write anywhere below the map's size, round 21's row). And sqlite3: a connection or cursor closed
 * by a user function, an authorizer, a progress handler or a collation while its statement steps (all three
 * interpreters: sqlite keeps using what the close freed).
 * harden_type(type, methods, slots): each method named in `methods` is replaced by a Guarded descriptor
 * that, by its flags, first makes its arguments plain (an `__index__` into an int, a buffer into a view of
 * it, a str subclass into a str, a slice of plain ints, a tuple or list of plain values, join's iterable
 * into a list of them: values whose use runs no code of the test's), counts the call as in progress (all
 * threads), is refused while any counted call is in progress, is refused on an object one of whose
 * exclusive calls is running, or is such an exclusive call (an unpickler's load re-entered from its own
 * persistent_load or an append, CPython gh-143638: a result freed while held; a Struct initialised again
 * from a value's __index__ inside its pack_into, gh-143379: its codes freed while read; expat's Parse
 * re-entered from a handler); an attribute flagged G_SETTER is refused assignment while a counted call
 * runs (a pickler's memo). `slots` does the same for the type's indexing, `in`, `%` (bytearray formats a
 * copy), call and next slots. The originals live only in the Guarded objects and these statics (no
 * Python attribute hands them out; gc scans are refused in a run). */

enum { G_PLAIN = 1, G_SCOPED = 2, G_REFUSED_IN_SCOPE = 4, G_ITERABLE_FIRST = 8, G_EXCLUSIVE = 16,
       G_NOT_WHILE_ACTIVE = 32, G_SETTER = 64 };

typedef struct {
    PyObject_HEAD
    PyObject *original;
    int flags;
} Guarded;

#define GUARDED_TYPES 16
typedef struct {
    PyTypeObject *type;
    int flags;
    binaryfunc subscript;
    objobjargproc ass_subscript;
    objobjproc contains;
    binaryfunc remainder;
    ternaryfunc call;
    iternextfunc iternext;
} GuardedType;

static GuardedType guarded_types[GUARDED_TYPES];
static int guarded_count;
static long scope_depth;  /* counted calls in progress, all threads (the GIL orders them) */
/* Objects inside one of their G_EXCLUSIVE calls (borrowed: the call's arguments hold them). */
#define ACTIVE_OBJECTS 64
static PyObject *active_objects[ACTIVE_OBJECTS];

static int
is_active(PyObject *obj)
{
    for (int i = 0; i < ACTIVE_OBJECTS; i++)
        if (active_objects[i] == obj)
            return 1;
    return 0;
}

static PyObject *plain_value(PyObject *v, int depth);

static PyObject *
plain_slice_part(PyObject *v)
{
    return v == Py_None ? Py_NewRef(v) : plain_value(v, 1);
}

/* A value equal, for a method of bytearray, mmap or sqlite3, to `v`, whose use runs no code of the test's. */
static PyObject *
plain_value(PyObject *v, int depth)
{
    if (v == Py_None || PyLong_CheckExact(v) || PyBool_Check(v) || PyFloat_CheckExact(v) ||
        PyUnicode_CheckExact(v) || PyBytes_CheckExact(v) || PyByteArray_CheckExact(v) || PyMemoryView_Check(v))
        return Py_NewRef(v);
    if (PySlice_Check(v)) {
        PySliceObject *s = (PySliceObject *)v;
        PyObject *start = plain_slice_part(s->start), *stop = start ? plain_slice_part(s->stop) : NULL;
        PyObject *step = stop ? plain_slice_part(s->step) : NULL;
        PyObject *out = step ? PySlice_New(start, stop, step) : NULL;
        Py_XDECREF(start);
        Py_XDECREF(stop);
        Py_XDECREF(step);
        return out;
    }
    if ((PyTuple_CheckExact(v) || PyList_CheckExact(v)) && depth == 0) {  /* startswith's prefixes, cast's shape */
        PyObject *out = PySequence_List(v);
        for (Py_ssize_t i = 0; out != NULL && i < PyList_GET_SIZE(out); i++) {
            PyObject *item = plain_value(PyList_GET_ITEM(out, i), 1);
            if (item == NULL)
                Py_CLEAR(out);
            else
                PyList_SetItem(out, i, item);
        }
        if (out != NULL && PyTuple_CheckExact(v))
            Py_SETREF(out, PyList_AsTuple(out));
        return out;
    }
    if (PyIndex_Check(v))
        return PyNumber_Index(v);  /* an exact int (an int subclass is copied, not asked) */
    if (PyObject_CheckBuffer(v))  /* its buffer taken now (its format and shape kept), held until the call ends */
        return PyMemoryView_FromObject(v);
    if (PyUnicode_Check(v))
        return PyUnicode_FromObject(v);
    return Py_NewRef(v);
}

/* The items of an iterable, read out now and made plain (join's argument). */
static PyObject *
plain_items(PyObject *iterable)
{
    PyObject *list = PySequence_List(iterable);
    for (Py_ssize_t i = 0; list != NULL && i < PyList_GET_SIZE(list); i++) {
        PyObject *item = plain_value(PyList_GET_ITEM(list, i), 1);
        if (item == NULL)
            Py_CLEAR(list);
        else
            PyList_SetItem(list, i, item);
    }
    return list;
}

static int
refused_in_scope(void)
{
    if (scope_depth <= 0)
        return 0;
    PyErr_SetString(PyExc_RuntimeError,
                    "repo2rlenv verifier: closing or changing a database connection, or a pickler's memo, while "
                    "a statement or a pickle runs (from a callback, or another thread) is refused in a graded run");
    return 1;
}

static PyObject *
guarded_call(Guarded *self, PyObject *args, PyObject *kwargs)
{
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    PyObject *call_args, *call_kwargs = NULL, *out = NULL;
    if (!(self->flags & G_PLAIN)) {
        call_args = Py_NewRef(args);
        call_kwargs = kwargs ? Py_NewRef(kwargs) : NULL;
    } else {
        call_args = PyTuple_New(n);
        for (Py_ssize_t i = 0; call_args != NULL && i < n; i++) {
            PyObject *item = PyTuple_GET_ITEM(args, i);
            item = i == 0 ? Py_NewRef(item)  /* the instance, which the original checks */
                 : (i == 1 && (self->flags & G_ITERABLE_FIRST)) ? plain_items(item) : plain_value(item, 0);
            if (item == NULL)
                Py_CLEAR(call_args);
            else
                PyTuple_SET_ITEM(call_args, i, item);
        }
        if (call_args != NULL && kwargs != NULL && PyDict_GET_SIZE(kwargs) > 0) {
            PyObject *key, *value;
            Py_ssize_t pos = 0;
            call_kwargs = PyDict_New();
            while (call_kwargs != NULL && PyDict_Next(kwargs, &pos, &key, &value)) {
                PyObject *plain = plain_value(value, 0);
                if (plain == NULL || PyDict_SetItem(call_kwargs, key, plain) < 0)
                    Py_CLEAR(call_kwargs);
                Py_XDECREF(plain);
            }
            if (call_kwargs == NULL)
                Py_CLEAR(call_args);
        }
    }
    PyObject *instance = call_args != NULL && n > 0 ? PyTuple_GET_ITEM(call_args, 0) : NULL;
    int slot = -1;
    if (instance != NULL && (self->flags & (G_EXCLUSIVE | G_NOT_WHILE_ACTIVE)) && is_active(instance)) {
        PyErr_Format(PyExc_RuntimeError, "repo2rlenv verifier: a %.100s is not used again from inside one of its "
                     "own calls in a graded run", Py_TYPE(instance)->tp_name);
        Py_CLEAR(call_args);
    }
    if (call_args != NULL && instance != NULL && (self->flags & G_EXCLUSIVE)) {
        for (int i = 0; slot < 0 && i < ACTIVE_OBJECTS; i++)
            if (active_objects[i] == NULL)
                active_objects[(slot = i)] = instance;
        if (slot < 0) {
            PyErr_SetString(PyExc_RuntimeError, "repo2rlenv verifier: too many nested calls");
            Py_CLEAR(call_args);
        }
    }
    if (call_args != NULL && !((self->flags & G_REFUSED_IN_SCOPE) && refused_in_scope())) {
        if (self->flags & G_SCOPED)
            scope_depth++;
        out = PyObject_Call(self->original, call_args, call_kwargs);
        if (self->flags & G_SCOPED)
            scope_depth--;
    }
    if (slot >= 0)
        active_objects[slot] = NULL;
    Py_XDECREF(call_args);
    Py_XDECREF(call_kwargs);
    return out;
}

/* Looked up on an instance it binds like a function; on the class it is itself (the instance comes first). */
static PyObject *
guarded_get(PyObject *self, PyObject *obj, PyObject *type)
{
    return obj == NULL ? Py_NewRef(self) : PyMethod_New(self, obj);
}

/* Guarded and GuardedSetter both begin with the object they stand for. */
static void
guarded_dealloc(PyObject *self)
{
    Py_XDECREF(((Guarded *)self)->original);
    PyObject_Free(self);
}

static PyTypeObject Guarded_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_r2e_kernel.Guarded",
    .tp_basicsize = sizeof(Guarded),
    .tp_dealloc = guarded_dealloc,
    .tp_call = (ternaryfunc)guarded_call,
    .tp_descr_get = guarded_get,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "a method whose arguments are made plain, or whose calls are counted (repo2rlenv verifier)",
};

/* An attribute whose assignment is refused while a counted call runs (a pickler's `memo`: assigning it
 * frees the table a running load or dump indexes); reading it is the original's. */
typedef struct {
    PyObject_HEAD
    PyObject *original;
} GuardedSetter;

static PyObject *
setter_get(GuardedSetter *self, PyObject *obj, PyObject *type)
{
    descrgetfunc get = Py_TYPE(self->original)->tp_descr_get;
    return get != NULL ? get(self->original, obj, type) : Py_NewRef(self->original);
}

static int
setter_set(GuardedSetter *self, PyObject *obj, PyObject *value)
{
    descrsetfunc set = Py_TYPE(self->original)->tp_descr_set;
    if (refused_in_scope())
        return -1;
    if (set == NULL) {
        PyErr_SetString(PyExc_AttributeError, "read-only attribute");
        return -1;
    }
    return set(self->original, obj, value);
}

static PyTypeObject GuardedSetter_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_r2e_kernel.GuardedSetter",
    .tp_basicsize = sizeof(GuardedSetter),
    .tp_dealloc = guarded_dealloc,
    .tp_descr_get = (descrgetfunc)setter_get,
    .tp_descr_set = (descrsetfunc)setter_set,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "an attribute not assigned while a counted call runs (repo2rlenv verifier)",
};

static GuardedType *
guarded_of(PyObject *obj)
{
    for (PyTypeObject *t = Py_TYPE(obj); t != NULL; t = t->tp_base)
        for (int i = 0; i < guarded_count; i++)
            if (guarded_types[i].type == t)
                return &guarded_types[i];
    PyErr_SetString(PyExc_SystemError, "repo2rlenv verifier: a guarded slot on an unguarded type");
    return NULL;
}

static PyObject *
guarded_subscript(PyObject *self, PyObject *key)
{
    GuardedType *g = guarded_of(self);
    PyObject *plain = g ? plain_value(key, 0) : NULL;
    PyObject *out = plain ? g->subscript(self, plain) : NULL;
    Py_XDECREF(plain);
    return out;
}

static int
guarded_ass_subscript(PyObject *self, PyObject *key, PyObject *value)
{
    GuardedType *g = guarded_of(self);
    PyObject *k = g ? plain_value(key, 0) : NULL;
    PyObject *v = k && value ? plain_value(value, 0) : NULL;
    int rc = k && (v || !value) ? g->ass_subscript(self, k, v) : -1;
    Py_XDECREF(k);
    Py_XDECREF(v);
    return rc;
}

static int
guarded_contains(PyObject *self, PyObject *value)
{
    GuardedType *g = guarded_of(self);
    PyObject *plain = g ? plain_value(value, 0) : NULL;
    int rc = plain ? g->contains(self, plain) : -1;
    Py_XDECREF(plain);
    return rc;
}

/* bytearray % args formats a bytes copy of itself: the arguments' conversions run while the format is read. */
static PyObject *
guarded_remainder(PyObject *v, PyObject *w)
{
    if (!PyByteArray_Check(v)) {
        GuardedType *g = guarded_of(w);
        return g ? g->remainder(v, w) : NULL;
    }
    PyObject *copy = PyBytes_FromStringAndSize(PyByteArray_AS_STRING(v), PyByteArray_GET_SIZE(v));
    PyObject *formatted = copy ? PyNumber_Remainder(copy, w) : NULL;
    PyObject *out = formatted && PyBytes_Check(formatted) ? PyByteArray_FromObject(formatted) : Py_XNewRef(formatted);
    Py_XDECREF(copy);
    Py_XDECREF(formatted);
    return out;
}

static PyObject *
guarded_mod_method(PyObject *self, PyObject *args)
{
    return guarded_remainder(self, args);
}

static PyObject *
guarded_rmod_method(PyObject *self, PyObject *other)
{
    return guarded_remainder(other, self);
}

static PyMethodDef guarded_mod_def = {"__mod__", guarded_mod_method, METH_O, "self % args, a copy formatted (repo2rlenv verifier)"};
static PyMethodDef guarded_rmod_def = {"__rmod__", guarded_rmod_method, METH_O, "other % self, a copy of other formatted (repo2rlenv verifier)"};

static PyObject *
guarded_tp_call(PyObject *self, PyObject *args, PyObject *kwargs)
{
    GuardedType *g = guarded_of(self);
    if (g == NULL)
        return NULL;
    scope_depth++;
    PyObject *out = g->call(self, args, kwargs);
    scope_depth--;
    return out;
}

static PyObject *
guarded_iternext(PyObject *self)
{
    GuardedType *g = guarded_of(self);
    if (g == NULL)
        return NULL;
    scope_depth++;
    PyObject *out = g->iternext(self);
    scope_depth--;
    return out;
}

static int
guard_method(PyTypeObject *t, PyObject *name, int flags)
{
    PyObject *dict = type_dict(t);
    PyObject *original = dict ? PyDict_GetItemWithError(dict, name) : NULL;  /* borrowed */
    if (original == NULL || Py_IS_TYPE(original, &Guarded_Type) || Py_IS_TYPE(original, &GuardedSetter_Type)) {
        if (original != NULL)
            PyErr_Format(PyExc_RuntimeError, "%s.%U is guarded already", t->tp_name, name);
        else if (!PyErr_Occurred())
            PyErr_Format(PyExc_TypeError, "%s has no method %R", t->tp_name, name);
        Py_XDECREF(dict);
        return -1;
    }
    int rc = -1;
    if (flags & G_SETTER) {
        GuardedSetter *g = PyObject_New(GuardedSetter, &GuardedSetter_Type);
        if (g != NULL) {
            g->original = Py_NewRef(original);
            rc = PyDict_SetItem(dict, name, (PyObject *)g);
            Py_DECREF(g);
        }
    } else {
        Guarded *g = PyObject_New(Guarded, &Guarded_Type);
        if (g != NULL) {
            g->original = Py_NewRef(original);
            g->flags = flags;
            rc = PyDict_SetItem(dict, name, (PyObject *)g);
            Py_DECREF(g);
        }
    }
    Py_DECREF(dict);
    return rc;
}

/* `visit(sub, arg)` for every subclass of `t`, theirs too (what exists now: subclasses made before a
 * hardening copied the original slot pointers when they were created; later ones inherit the new ones). */
static int
for_each_subclass(PyTypeObject *t, void (*visit)(PyTypeObject *, void *), void *arg)
{
    PyObject *subs = PyObject_CallMethod((PyObject *)t, "__subclasses__", NULL);
    if (subs == NULL || !PyList_Check(subs)) {
        Py_XDECREF(subs);
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "__subclasses__ did not return a list");
        return -1;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(subs); i++) {
        PyTypeObject *sub = (PyTypeObject *)PyList_GET_ITEM(subs, i);
        visit(sub, arg);
        PyType_Modified(sub);
        if (for_each_subclass(sub, visit, arg) < 0) {
            Py_DECREF(subs);
            return -1;
        }
    }
    Py_DECREF(subs);
    return 0;
}

/* Each original slot a subclass still has is replaced too (its instances find `g` through tp_base), or its
 * indexing would reach the unguarded C code. */
static void
guard_subclass(PyTypeObject *s, void *arg)
{
    GuardedType *g = arg;
    if (s->tp_as_mapping != NULL && g->subscript != NULL && s->tp_as_mapping->mp_subscript == g->subscript)
        s->tp_as_mapping->mp_subscript = guarded_subscript;
    if (s->tp_as_mapping != NULL && g->ass_subscript != NULL && s->tp_as_mapping->mp_ass_subscript == g->ass_subscript)
        s->tp_as_mapping->mp_ass_subscript = guarded_ass_subscript;
    if (s->tp_as_sequence != NULL && g->contains != NULL && s->tp_as_sequence->sq_contains == g->contains)
        s->tp_as_sequence->sq_contains = guarded_contains;
    if (s->tp_as_number != NULL && g->remainder != NULL && s->tp_as_number->nb_remainder == g->remainder)
        s->tp_as_number->nb_remainder = guarded_remainder;
    if (g->call != NULL && s->tp_call == g->call)
        s->tp_call = guarded_tp_call;
    if (g->iternext != NULL && s->tp_iternext == g->iternext)
        s->tp_iternext = guarded_iternext;
}

/* harden_type(type, {method name: flags}, slot flags) -> None, once per type. Slots: with G_PLAIN the
 * indexing and `in` slots make their arguments plain (and bytearray's `%` formats a copy); with G_SCOPED
 * the call and next slots count as calls in progress. */
static PyObject *
harden_type(PyObject *self, PyObject *args)
{
    PyObject *type, *names;
    int slots;
    if (!PyArg_ParseTuple(args, "O!O!i", &PyType_Type, &type, &PyDict_Type, &names, &slots))
        return NULL;
    if (PyType_Ready(&Guarded_Type) < 0 || PyType_Ready(&GuardedSetter_Type) < 0)
        return NULL;
    PyTypeObject *t = (PyTypeObject *)type;
    for (int i = 0; i < guarded_count; i++)
        if (guarded_types[i].type == t) {
            PyErr_Format(PyExc_RuntimeError, "%s is hardened already", t->tp_name);
            return NULL;
        }
    if (guarded_count == GUARDED_TYPES) {
        PyErr_SetString(PyExc_RuntimeError, "harden_type: too many types");
        return NULL;
    }
    PyObject *name, *flags;
    Py_ssize_t pos = 0;
    while (PyDict_Next(names, &pos, &name, &flags)) {
        long f = PyLong_AsLong(flags);
        if ((f == -1 && PyErr_Occurred()) || !PyUnicode_CheckExact(name) || guard_method(t, name, (int)f) < 0) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "harden_type takes {str: int}");
            return NULL;
        }
    }
    GuardedType *g = &guarded_types[guarded_count++];
    g->type = (PyTypeObject *)Py_NewRef(type);
    g->flags = slots;
    if ((slots & G_PLAIN) && t->tp_as_mapping != NULL) {
        if ((g->subscript = t->tp_as_mapping->mp_subscript) != NULL)
            t->tp_as_mapping->mp_subscript = guarded_subscript;
        if ((g->ass_subscript = t->tp_as_mapping->mp_ass_subscript) != NULL)
            t->tp_as_mapping->mp_ass_subscript = guarded_ass_subscript;
    }
    if ((slots & G_PLAIN) && t->tp_as_sequence != NULL && (g->contains = t->tp_as_sequence->sq_contains) != NULL)
        t->tp_as_sequence->sq_contains = guarded_contains;
    if ((slots & G_PLAIN) && t == &PyByteArray_Type && t->tp_as_number != NULL &&
        (g->remainder = t->tp_as_number->nb_remainder) != NULL) {
        t->tp_as_number->nb_remainder = guarded_remainder;
        if (set_method(t, &guarded_mod_def) < 0 || set_method(t, &guarded_rmod_def) < 0)
            return NULL;
    }
    if ((slots & G_SCOPED) && (g->call = t->tp_call) != NULL)
        t->tp_call = guarded_tp_call;
    if ((slots & G_SCOPED) && (g->iternext = t->tp_iternext) != NULL)
        t->tp_iternext = guarded_iternext;
    PyType_Modified(t);
    if (for_each_subclass(t, guard_subclass, g) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ items held while compared
 * Red team round 22: list's comparison on 3.11 (CPython gh-120298, fixed in 3.12.5) compares the first
 * items that differ a second time, with the test's operator, while holding neither: a `__lt__` that empties
 * the other list frees the item being compared, a bytearray's buffer takes its block, and the interpreter
 * then reads a type of the test's making from it (a fake object, any address read). deque.index on 3.11.2
 * compares each item without holding it (gh-115243) the same way. These hold every item they compare
 * (as the fixed releases do), whatever the interpreter. */
static richcmpfunc original_list_richcompare;

static PyObject *
held_list_richcompare(PyObject *v, PyObject *w, int op)
{
    if (!PyList_Check(v) || !PyList_Check(w))
        Py_RETURN_NOTIMPLEMENTED;
    PyListObject *vl = (PyListObject *)v, *wl = (PyListObject *)w;
    if (Py_SIZE(vl) != Py_SIZE(wl) && (op == Py_EQ || op == Py_NE)) {
        if (op == Py_EQ)
            Py_RETURN_FALSE;
        Py_RETURN_TRUE;
    }
    Py_ssize_t i;
    for (i = 0; i < Py_SIZE(vl) && i < Py_SIZE(wl); i++) {
        PyObject *vitem = vl->ob_item[i], *witem = wl->ob_item[i];
        if (vitem == witem)
            continue;
        Py_INCREF(vitem);
        Py_INCREF(witem);
        int k = PyObject_RichCompareBool(vitem, witem, Py_EQ);
        Py_DECREF(vitem);
        Py_DECREF(witem);
        if (k < 0)
            return NULL;
        if (!k)
            break;
    }
    if (i >= Py_SIZE(vl) || i >= Py_SIZE(wl))
        Py_RETURN_RICHCOMPARE(Py_SIZE(vl), Py_SIZE(wl), op);
    if (op == Py_EQ)
        Py_RETURN_FALSE;
    if (op == Py_NE)
        Py_RETURN_TRUE;
    PyObject *vitem = Py_NewRef(vl->ob_item[i]), *witem = Py_NewRef(wl->ob_item[i]);
    PyObject *result = PyObject_RichCompare(vitem, witem, op);
    Py_DECREF(vitem);
    Py_DECREF(witem);
    return result;
}

/* list.__lt__ and the others: their slot wrappers keep the original C function. */
#define HELD_COMPARE(name, op) \
    static PyObject *held_##name(PyObject *self, PyObject *other) { return held_list_richcompare(self, other, op); }
HELD_COMPARE(lt, Py_LT)
HELD_COMPARE(le, Py_LE)
HELD_COMPARE(eq, Py_EQ)
HELD_COMPARE(ne, Py_NE)
HELD_COMPARE(gt, Py_GT)
HELD_COMPARE(ge, Py_GE)
static PyMethodDef held_compare_defs[] = {
    {"__lt__", held_lt, METH_O, "self < other, each item held while compared (repo2rlenv verifier)"},
    {"__le__", held_le, METH_O, "self <= other, each item held while compared (repo2rlenv verifier)"},
    {"__eq__", held_eq, METH_O, "self == other, each item held while compared (repo2rlenv verifier)"},
    {"__ne__", held_ne, METH_O, "self != other, each item held while compared (repo2rlenv verifier)"},
    {"__gt__", held_gt, METH_O, "self > other, each item held while compared (repo2rlenv verifier)"},
    {"__ge__", held_ge, METH_O, "self >= other, each item held while compared (repo2rlenv verifier)"},
};

/* List's extended-slice assignment on 3.11 measures the slice against the list's length and only then reads
 * the value out: a value whose __iter__ empties the list and grows it again puts the writes past the new
 * item array, into the blocks cut after it (red team round 25: a victim list's item pointer, then any
 * address read, on the one-time heap). The value is read out first, as 3.12 does; lists and tuples, which
 * run no code of the test's, are passed as they are. */
static objobjargproc original_list_ass_subscript;

static int
held_list_ass_subscript(PyObject *self, PyObject *key, PyObject *value)
{
    if (value == NULL || !PySlice_Check(key) || PyList_CheckExact(value) || PyTuple_CheckExact(value) ||
        (Py_TYPE(value)->tp_iter == NULL && !PySequence_Check(value)))  /* not iterable: the original says so */
        return original_list_ass_subscript(self, key, value);
    PyObject *items = PySequence_List(value);
    if (items == NULL)
        return -1;
    int done = original_list_ass_subscript(self, key, items);
    Py_DECREF(items);
    return done;
}

static PyObject *
held_list_setitem(PyObject *self, PyObject *args)
{
    PyObject *key, *value;
    if (!PyArg_ParseTuple(args, "OO:__setitem__", &key, &value) || held_list_ass_subscript(self, key, value) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef held_list_setitem_def = {"__setitem__", held_list_setitem, METH_VARARGS,
                                            "self[key] = value, an iterable read out first (repo2rlenv verifier)"};

/* Subclasses made before copied the original slots. */
static void
hold_in_subclass(PyTypeObject *sub, void *unused)
{
    if (sub->tp_richcompare == original_list_richcompare)
        sub->tp_richcompare = held_list_richcompare;
    if (sub->tp_as_mapping != NULL && sub->tp_as_mapping->mp_ass_subscript == original_list_ass_subscript)
        sub->tp_as_mapping->mp_ass_subscript = held_list_ass_subscript;
}

/* deque.index(value, [start, [stop]]) over a list of the deque's items (each held while compared); the
 * deque changing size meanwhile is the RuntimeError deque's own index raises. */
static PyObject *
held_deque_index(PyObject *self, PyObject *args)
{
    PyObject *v, *start_obj = NULL, *stop_obj = NULL;
    if (!PyArg_ParseTuple(args, "O|OO:index", &v, &start_obj, &stop_obj))
        return NULL;
    Py_ssize_t start = 0, stop = PY_SSIZE_T_MAX;
    if (start_obj != NULL && (start = PyNumber_AsSsize_t(start_obj, NULL)) == -1 && PyErr_Occurred())
        return NULL;
    if (stop_obj != NULL && (stop = PyNumber_AsSsize_t(stop_obj, NULL)) == -1 && PyErr_Occurred())
        return NULL;
    PyObject *items = PySequence_List(self);  /* after the conversions: they may change the deque */
    if (items == NULL)
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(items);
    if (start < 0 && (start += n) < 0)
        start = 0;
    if (stop < 0 && (stop += n) < 0)
        stop = 0;
    if (stop > n)
        stop = n;
    for (Py_ssize_t i = start; i < stop; i++) {
        int cmp = PyObject_RichCompareBool(PyList_GET_ITEM(items, i), v, Py_EQ);  /* `items` holds it */
        if (cmp < 0) {
            Py_DECREF(items);
            return NULL;
        }
        if (PyObject_Length(self) != n) {
            Py_DECREF(items);
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_RuntimeError, "deque mutated during iteration");
            return NULL;
        }
        if (cmp > 0) {
            Py_DECREF(items);
            return PyLong_FromSsize_t(i);
        }
    }
    Py_DECREF(items);
    PyErr_Format(PyExc_ValueError, "%R is not in deque", v);
    return NULL;
}

static PyMethodDef held_deque_index_def = {
    "index", held_deque_index, METH_VARARGS,
    "D.index(value, [start, [stop]]) -> first index of value, each item held while compared (repo2rlenv verifier)"};

static int items_held;

/* hold_items(list, collections.deque): list's comparison and deque.index hold what they compare. */
static PyObject *
hold_items(PyObject *self, PyObject *args)
{
    PyObject *list_type, *deque_type;
    if (!PyArg_ParseTuple(args, "O!O!", &PyType_Type, &list_type, &PyType_Type, &deque_type))
        return NULL;
    if (list_type != (PyObject *)&PyList_Type) {
        PyErr_SetString(PyExc_TypeError, "hold_items takes list and collections.deque");
        return NULL;
    }
    if (items_held) {
        PyErr_SetString(PyExc_RuntimeError, "items are held already");
        return NULL;
    }
    original_list_richcompare = PyList_Type.tp_richcompare;
    PyList_Type.tp_richcompare = held_list_richcompare;
    original_list_ass_subscript = PyList_Type.tp_as_mapping->mp_ass_subscript;
    PyList_Type.tp_as_mapping->mp_ass_subscript = held_list_ass_subscript;
    PyType_Modified(&PyList_Type);
    for (size_t i = 0; i < sizeof(held_compare_defs) / sizeof(held_compare_defs[0]); i++)
        if (set_method(&PyList_Type, &held_compare_defs[i]) < 0)
            return NULL;
    if (set_method(&PyList_Type, &held_list_setitem_def) < 0)
        return NULL;
    if (for_each_subclass(&PyList_Type, hold_in_subclass, NULL) < 0 ||
        set_method((PyTypeObject *)deque_type, &held_deque_index_def) < 0)
        return NULL;
    items_held = 1;
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ print and input hold sys's streams
 * On 3.11 print and input read sys.stdout (input: stdin and stderr too) without holding them (CPython
 * gh-130163, fixed in 3.12): an argument's __str__ (a prompt's) that replaces sys.stdout frees the file
 * they then write to (a crash on Debian's 3.11.2, round 22's survey). These hold them for the call. */
static PyObject *original_print, *original_input;

static PyObject *
held_print(PyObject *self, PyObject *args, PyObject *kwargs)
{
    PyObject *file = kwargs != NULL ? PyDict_GetItemString(kwargs, "file") : NULL;  /* borrowed */
    PyObject *out = PySys_GetObject("stdout");  /* borrowed */
    if ((file != NULL && file != Py_None) || out == NULL || out == Py_None)
        return PyObject_Call(original_print, args, kwargs);
    PyObject *held = kwargs != NULL ? PyDict_Copy(kwargs) : PyDict_New();
    if (held == NULL || PyDict_SetItemString(held, "file", out) < 0) {  /* the copy holds the stream */
        Py_XDECREF(held);
        return NULL;
    }
    PyObject *result = PyObject_Call(original_print, args, held);
    Py_DECREF(held);
    return result;
}

static PyObject *
held_input(PyObject *self, PyObject *args, PyObject *kwargs)
{
    PyObject *streams[3] = {PySys_GetObject("stdin"), PySys_GetObject("stdout"), PySys_GetObject("stderr")};
    for (int i = 0; i < 3; i++)
        Py_XINCREF(streams[i]);
    PyObject *result = PyObject_Call(original_input, args, kwargs);
    for (int i = 0; i < 3; i++)
        Py_XDECREF(streams[i]);
    return result;
}

static PyMethodDef held_print_def = {"print", (PyCFunction)(void (*)(void))held_print, METH_VARARGS | METH_KEYWORDS,
                                     "print(*values, sep=' ', end='\\n', file=None, flush=False), sys.stdout held (repo2rlenv verifier)"};
static PyMethodDef held_input_def = {"input", (PyCFunction)(void (*)(void))held_input, METH_VARARGS | METH_KEYWORDS,
                                     "input(prompt='', /), sys's streams held (repo2rlenv verifier)"};

/* Any other C function of the standard library's that reads a sys stream without holding it and then runs
 * the test's code (3.11: sys.displayhook's repr, _warnings' show_warning with a str subclass's filename,
 * faulthandler's fileno(); round 23 made a reader from displayhook): called through HeldCall, which holds
 * the three streams for the call. Only its name and doc are the original's; the original is not reachable. */
typedef struct {
    PyObject_HEAD
    PyObject *original;
} HeldCall;

static PyObject *
heldcall_call(HeldCall *self, PyObject *args, PyObject *kwargs)
{
    PyObject *streams[3] = {PySys_GetObject("stdin"), PySys_GetObject("stdout"), PySys_GetObject("stderr")};
    for (int i = 0; i < 3; i++)
        Py_XINCREF(streams[i]);
    PyObject *result = PyObject_Call(self->original, args, kwargs);
    for (int i = 0; i < 3; i++)
        Py_XDECREF(streams[i]);
    return result;
}

static PyObject *
heldcall_getattro(HeldCall *self, PyObject *name)
{
    static const char *const forwarded[] = {"__name__", "__qualname__", "__doc__", "__module__", NULL};
    for (const char *const *f = forwarded; *f != NULL; f++)
        if (PyUnicode_Check(name) && PyUnicode_CompareWithASCIIString(name, *f) == 0)
            return PyObject_GetAttr(self->original, name);
    return PyObject_GenericGetAttr((PyObject *)self, name);
}

static void
heldcall_dealloc(PyObject *self)
{
    Py_XDECREF(((HeldCall *)self)->original);
    PyObject_Free(self);
}

static PyTypeObject HeldCall_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_r2e_kernel.HeldCall",
    .tp_basicsize = sizeof(HeldCall),
    .tp_dealloc = heldcall_dealloc,
    .tp_call = (ternaryfunc)heldcall_call,
    .tp_getattro = (getattrofunc)heldcall_getattro,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "a standard library function called with sys's streams held (repo2rlenv verifier)",
};

/* hold_streams(builtins, [(namespace dict, name), ...]) -> [(original, replacement), ...]: builtins.print
 * and input, and each named function, hold the streams they use; the pairs let the caller replace other
 * references to the originals (a module's `from warnings import warn`). */
static PyObject *
hold_streams(PyObject *self, PyObject *args)
{
    PyObject *module, *targets;
    if (!PyArg_ParseTuple(args, "O!O!", &PyModule_Type, &module, &PyList_Type, &targets))
        return NULL;
    if (original_print != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "the streams are held already");
        return NULL;
    }
    if (PyType_Ready(&HeldCall_Type) < 0)
        return NULL;
    PyObject *dict = PyModule_GetDict(module);  /* borrowed */
    PyObject *print = PyDict_GetItemString(dict, "print"), *input = PyDict_GetItemString(dict, "input");
    if (print == NULL || input == NULL || !PyCFunction_Check(print) || !PyCFunction_Check(input)) {
        PyErr_SetString(PyExc_TypeError, "builtins has no C print and input");
        return NULL;
    }
    PyObject *pairs = PyList_New(0);
    PyObject *new_print = PyCFunction_New(&held_print_def, NULL), *new_input = PyCFunction_New(&held_input_def, NULL);
    if (pairs == NULL || new_print == NULL || new_input == NULL)
        goto error;
    original_print = Py_NewRef(print);
    original_input = Py_NewRef(input);
    PyObject *pair = Py_BuildValue("(OO)", print, new_print);
    if (pair == NULL || PyList_Append(pairs, pair) < 0) {
        Py_XDECREF(pair);
        goto error;
    }
    Py_DECREF(pair);
    if ((pair = Py_BuildValue("(OO)", input, new_input)) == NULL || PyList_Append(pairs, pair) < 0) {
        Py_XDECREF(pair);
        goto error;
    }
    Py_DECREF(pair);
    if (PyDict_SetItemString(dict, "print", new_print) < 0 || PyDict_SetItemString(dict, "input", new_input) < 0)
        goto error;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(targets); i++) {
        PyObject *where, *name;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(targets, i), "O!U", &PyDict_Type, &where, &name))
            goto error;
        PyObject *original = PyDict_GetItemWithError(where, name);  /* borrowed */
        if (original == NULL || !PyCFunction_Check(original)) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_TypeError, "%R is not a C function", name);
            goto error;
        }
        HeldCall *held = PyObject_New(HeldCall, &HeldCall_Type);
        if (held == NULL)
            goto error;
        held->original = Py_NewRef(original);
        pair = Py_BuildValue("(OO)", original, (PyObject *)held);
        int rc = pair == NULL ? -1 : PyList_Append(pairs, pair);
        Py_XDECREF(pair);
        rc = rc < 0 ? -1 : PyDict_SetItem(where, name, (PyObject *)held);
        Py_DECREF(held);
        if (rc < 0)
            goto error;
    }
    Py_DECREF(new_print);
    Py_DECREF(new_input);
    return pairs;
error:
    Py_XDECREF(pairs);
    Py_XDECREF(new_print);
    Py_XDECREF(new_input);
    return NULL;
}

/* ------------------------------------------------------------------ types no run may make instances of
 * C OrderedDict computes indexes and node pointers before a key lookup that runs the test's __eq__ and uses
 * them after (CPython gh-142637 and its family, open upstream: round 23 made a reader of move_to_end on both
 * images). The zygote points collections.OrderedDict at the standard library's Python class and checks no
 * C instance exists; this refuses making one (the type's constructor, a subclass's, dict.__new__(type)). */
static newfunc refused_new_original;

static PyObject *
refused_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyErr_Format(PyExc_RuntimeError, "repo2rlenv verifier: the C %.100s is kept out of graded runs "
                 "(collections.OrderedDict is the standard library's Python class)", type->tp_name);
    return NULL;
}

static void
refuse_in_subclass(PyTypeObject *sub, void *unused)
{
    if (sub->tp_new == refused_new_original)
        sub->tp_new = refused_new;
}

/* refuse_instances(type): no new instance of `type` or of a subclass of it (once). */
static PyObject *
refuse_instances(PyObject *self, PyObject *type)
{
    if (!PyType_Check(type) || refused_new_original != NULL) {
        PyErr_SetString(refused_new_original != NULL ? PyExc_RuntimeError : PyExc_TypeError,
                        refused_new_original != NULL ? "instances are refused already" : "refuse_instances takes a type");
        return NULL;
    }
    PyTypeObject *t = (PyTypeObject *)type;
    refused_new_original = t->tp_new;
    t->tp_new = refused_new;
    PyType_Modified(t);
    if (for_each_subclass(t, refuse_in_subclass, NULL) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *lock(PyObject *self, PyObject *unused);

static PyMethodDef methods[] = {
    {"create_ruleset", create_ruleset, METH_VARARGS, "landlock_create_ruleset(attr, flags) -> int"},
    {"add_rule", add_rule, METH_VARARGS, "landlock_add_rule(ruleset, rule_type, attr)"},
    {"restrict_self", restrict_self, METH_VARARGS, "landlock_restrict_self(ruleset)"},
    {"no_new_privs", no_new_privs, METH_NOARGS, "prctl(PR_SET_NO_NEW_PRIVS, 1)"},
    {"seccomp", install_seccomp, METH_VARARGS, "install a seccomp BPF filter"},
    {"set_pdeathsig", set_pdeathsig, METH_VARARGS, "prctl(PR_SET_PDEATHSIG, signal)"},
    {"set_dumpable", set_dumpable, METH_VARARGS, "prctl(PR_SET_DUMPABLE, flag)"},
    {"map_library", map_library, METH_VARARGS, "dlopen(path, flags), keeping no handle"},
    {"audit_hook", audit_hook, METH_VARARGS, "install the verifier's audit hook (once)"},
    {"arm", arm, METH_NOARGS, "from now on, refuse an event raised while a collection runs"},
    {"frame_argument", frame_argument, METH_VARARGS, "a frame's local slot (its arguments first), or None"},
    {"record_lines", record_lines, METH_VARARGS, "start the line recorder (3.11), once"},
    {"trace_here", trace_here, METH_NOARGS, "the line recorder in this thread too, once started"},
    {"harden_array", harden_array, METH_O, "array.array's entry points that run a conversion in its C code take plain items"},
    {"harden_streams", harden_streams, METH_VARARGS, "streams handed to buffered IO and pickle read and write through copies; pairwise not re-entered"},
    {"harden_type", harden_type, METH_VARARGS, "a type's named methods and slots take plain arguments, or count or refuse calls"},
    {"hold_items", hold_items, METH_VARARGS, "list's comparison and deque.index hold every item they compare"},
    {"hold_streams", hold_streams, METH_VARARGS, "builtins.print and input, and named C functions, hold the sys streams they use"},
    {"refuse_instances", refuse_instances, METH_O, "no new instance of a type (C OrderedDict) or of its subclasses"},
    {"one_time_heap", one_time_heap, METH_NOARGS, "from now on no address holds two allocations of the interpreter's (r2e_heap.h)"},
    {"guard_imports", guard_imports, METH_O, "_imp's creators refuse creating array (or _imp) again"},
    {"lock", lock, METH_NOARGS, "from now on, refuse every set-up call (the submission runs next)"},
    {"settrace", settrace, METH_O, "sys.settrace in a run: None switches tracing off; any tracer is refused"},
    {NULL, NULL, 0, NULL},
};

/* lock() -> None: the set-up is over (the verifier calls it once the session is set up, before collection):
 * every call not in `after_lock` is refused from now on. It only restricts; calling it again changes nothing. */
static PyObject *
lock(PyObject *self, PyObject *unused)
{
    for (PyMethodDef *def = methods; def->ml_name != NULL; def++) {
        int kept = 0;
        for (const char *const *name = after_lock; *name != NULL; name++)
            kept |= strcmp(def->ml_name, *name) == 0;
        if (!kept)
            def->ml_meth = refused;
    }
    Py_RETURN_NONE;
}

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_r2e_kernel",
    "The kernel calls a graded run confines itself with, and its audit hook (repo2rlenv); none can widen "
    "what it may do.",
    -1, methods,
};

PyMODINIT_FUNC
PyInit__r2e_kernel(void)
{
    PyObject *m = PyModule_Create(&module);
    /* HOOK_API: what audit_hook, frame_argument, record_lines, trace_here and settrace do, as
     * verifier_guard.native_hook expects it; a verifier finding another number (an image built from an older
     * or newer source) uses Python's own hook and recorder. 4: the C line recorder, and sys.settrace only its
     * own (3 was an earlier form of the same, with a tracer rule this module no longer has). 5: lock(), and
     * frame_argument answering only the hook. (lock() became an allowlist of the calls it keeps
     * later: the same calls refused, so the same number.) */
    if (m != NULL && (PyModule_AddStringConstant(m, "name", "r2e_kernel") < 0 ||
                      PyModule_AddIntConstant(m, "HOOK_API", 5) < 0)) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}

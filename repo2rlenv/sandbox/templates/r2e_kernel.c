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
 * Built into the base images (scripts/build_base_image.sh) and, for the local sandbox, into its venv when
 * a C compiler and Python's headers are there (repo2rlenv/sandbox/kernel_ext.py). Without it the verifier
 * falls back to ctypes and says so in the reward details.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <dlfcn.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The Landlock calls have these numbers on every architecture (older headers lack the names). */
#define R2E_LANDLOCK_CREATE_RULESET 444
#define R2E_LANDLOCK_ADD_RULE 445
#define R2E_LANDLOCK_RESTRICT_SELF 446

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

static PyMethodDef methods[] = {
    {"create_ruleset", create_ruleset, METH_VARARGS, "landlock_create_ruleset(attr, flags) -> int"},
    {"add_rule", add_rule, METH_VARARGS, "landlock_add_rule(ruleset, rule_type, attr)"},
    {"restrict_self", restrict_self, METH_VARARGS, "landlock_restrict_self(ruleset)"},
    {"no_new_privs", no_new_privs, METH_NOARGS, "prctl(PR_SET_NO_NEW_PRIVS, 1)"},
    {"seccomp", install_seccomp, METH_VARARGS, "install a seccomp BPF filter"},
    {"set_pdeathsig", set_pdeathsig, METH_VARARGS, "prctl(PR_SET_PDEATHSIG, signal)"},
    {"set_dumpable", set_dumpable, METH_VARARGS, "prctl(PR_SET_DUMPABLE, flag)"},
    {"map_library", map_library, METH_VARARGS, "dlopen(path, flags), keeping no handle"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_r2e_kernel",
    "The kernel calls a graded run confines itself with (repo2rlenv); none can widen what it may do.",
    -1, methods,
};

PyMODINIT_FUNC
PyInit__r2e_kernel(void)
{
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && PyModule_AddStringConstant(m, "name", "r2e_kernel") < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}

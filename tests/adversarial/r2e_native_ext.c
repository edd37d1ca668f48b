/* The tiny extension the "native code" rows load from a run's tmp dir (r2e_native_ext.b64 = base64(zlib(.so))).
   Built with: gcc -shared -fPIC -Os -s -nostartfiles -I/usr/include/python3.11 r2e_native_ext.c -o r2ex.so */
#include <Python.h>
static PyObject *code(PyObject *self, PyObject *f) {
    if (!PyFunction_Check(f)) { PyErr_SetString(PyExc_TypeError, "function"); return NULL; }
    PyObject *c = PyFunction_GetCode(f); Py_INCREF(c); return c;
}
static PyMethodDef M[] = {{"code", code, METH_O, NULL}, {NULL}};
static struct PyModuleDef D = {PyModuleDef_HEAD_INIT, "r2ex", NULL, -1, M};
PyMODINIT_FUNC PyInit_r2ex(void) { return PyModule_Create(&D); }

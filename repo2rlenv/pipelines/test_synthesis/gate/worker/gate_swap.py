"""Putting a mutant in: swap `__code__` on the live functions when nothing in the parent can have seen the
original's behaviour, else import the repo afresh with the mutated source served from memory.

A sibling of `gate_worker.py` (see its docstring for the why), shipped with it; stdlib + pytest only.
"""

import importlib
import importlib.machinery
import importlib.metadata
import importlib.util
import os
import sys
import types

from gate_warmup import code_key, under


# Function code objects (def, lambda, comprehension) carry both flags; module and class bodies neither.
_FUNCTION_FLAGS = 0x01 | 0x02  # CO_OPTIMIZED | CO_NEWLOCALS


# generator, coroutine, iterable coroutine, async generator: decorators read these when applied.
_KIND_FLAGS = 0x20 | 0x80 | 0x100 | 0x200


class NoSwap(Exception):
    """The mutant cannot be swapped in by `__code__`; the child imports the repo afresh instead."""


def _nested(code):
    return [c for c in code.co_consts if isinstance(c, types.CodeType)]


def _const_key(value):
    """A key equal only for identical constants (`1 == 1.0 == True` and `0.0 == -0.0` must differ)."""
    if isinstance(value, types.CodeType):
        return "<code>"
    if isinstance(value, (tuple, frozenset)):
        keys = (_const_key(v) for v in value)
        return type(value), (tuple(keys) if isinstance(value, tuple) else frozenset(keys))
    if isinstance(value, (float, complex)):
        return type(value), repr(value)
    return type(value), value


def _shape(code):
    """Everything of a code object that decides behaviour, without line numbers and nested code."""
    consts = tuple(_const_key(c) for c in code.co_consts)
    return (code.co_code, consts, code.co_names, code.co_varnames, code.co_freevars, code.co_cellvars,
            code.co_flags, code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount, code.co_name,
            getattr(code, "co_qualname", None), getattr(code, "co_exceptiontable", None))


def _same_modulo_lines(a, b):
    return _shape(a) == _shape(b) and all(_same_modulo_lines(x, y) for x, y in zip(_nested(a), _nested(b)))


def _changed_functions(orig, mut, out):
    """Collect (original, mutated) pairs of function code that differ; NoSwap when code that ran at
    import (module and class bodies) differs other than in line numbers."""
    if _shape(orig) != _shape(mut):
        raise NoSwap(f"import-time code of {orig.co_name} changed")
    for a, b in zip(_nested(orig), _nested(mut)):
        if a.co_flags & _FUNCTION_FLAGS == _FUNCTION_FLAGS:
            if a != b:
                out.append((a, b))
        else:
            _changed_functions(a, b, out)


def _ran(code, executed):
    return id(code) in executed or any(_ran(c, executed) for c in _nested(code))


def _compile_file(file):
    with open(file, encoding="utf-8") as handle:
        return compile(handle.read(), file, "exec", dont_inherit=True)


def compile_originals(warm, jobs):
    """In the parent: compile each target module as on disk once, not once per child (a compile of a
    large module is a good part of a warm-session child's time)."""
    for job in jobs:
        file = getattr(sys.modules.get(job["module"]), "__file__", None)
        if file and file not in warm.originals:
            try:
                warm.originals[file] = _compile_file(file)
            except (OSError, SyntaxError, ValueError):
                pass  # the child tries again and reports why


def plan_swap(job, warm):
    """[(live function, new code)] putting the job's mutant in, or NoSwap."""
    if not job["tests"]:
        raise NoSwap("no tests: an import check only")
    module = sys.modules.get(job["module"])
    file = getattr(module, "__file__", None)
    if not file or os.path.realpath(file) != os.path.realpath(os.path.join(warm.root, job["path"])):
        raise NoSwap("module not imported from the work copy by the warm-up")
    try:
        pairs = []
        _changed_functions(warm.originals.get(file) or _compile_file(file),
                           compile(job["mutated_source"], file, "exec", dont_inherit=True), pairs)
    except (SyntaxError, ValueError) as exc:
        raise NoSwap(f"does not compile: {exc}")
    plan = []
    for a, b in pairs:
        live = [f for f in warm.functions.get(code_key(a), ()) if f.__code__ == a]
        real = not _same_modulo_lines(a, b)
        if real:
            if not live:
                raise NoSwap(f"no live function has the code of {a.co_qualname}")
            if a.co_freevars != b.co_freevars or (a.co_flags & _KIND_FLAGS) != (b.co_flags & _KIND_FLAGS):
                raise NoSwap(f"{a.co_qualname}: free variables or function kind changed")
            if any(_ran(f.__code__, warm.executed) for f in live):
                raise NoSwap(f"{a.co_qualname} ran during the warm-up (import or collection time)")
        # Functions that only moved (a removed multi-line statement above them) get their new line
        # numbers too where that is possible, so tracebacks match the subprocess run.
        plan.extend((f, b) for f in live if real or a.co_freevars == b.co_freevars)
    if not any(not _same_modulo_lines(a, b) for a, b in pairs):
        raise NoSwap("no function code changed")
    return plan


def apply_swap(plan):
    """Set each function's new code; all or nothing."""
    done = []
    try:
        for func, code in plan:
            done.append((func, func.__code__))
            func.__code__ = code
    except ValueError as exc:  # e.g. a closure whose cell count the new code does not fit
        for func, code in reversed(done):
            func.__code__ = code
        raise NoSwap(f"cannot set __code__: {exc}")


class MutantLoader(importlib.machinery.SourceFileLoader):
    """Serves the mutated source from memory and never touches bytecode caches."""

    def __init__(self, fullname, path, source):
        super().__init__(fullname, path)
        self.source = source.encode("utf-8")

    def get_data(self, path):
        return self.source if path == self.path else super().get_data(path)

    def path_stats(self, path):
        raise OSError("a mutant has no bytecode cache")


class MutantFinder:
    """Meta path finder answering for the mutated module only."""

    def __init__(self, name, path, source):
        self.name, self.path, self.source = name, path, source

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.name:
            return None
        return importlib.util.spec_from_file_location(fullname, self.path,
                                                      loader=MutantLoader(fullname, self.path, self.source))


def drop_repo_modules(warm, job):
    top = job["module"].split(".")[0]
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if (name in warm.test_modules or name == top or name.startswith(top + ".")
                or (file and under(file, warm.root))):
            del sys.modules[name]
    importlib.invalidate_caches()


def imports_ok(warm, job):
    """GateRunner's import check: a fresh import of the module with the mutant in it."""
    drop_repo_modules(warm, job)
    try:
        importlib.import_module(job["module"])
    except BaseException as exc:  # SystemExit and KeyboardInterrupt from module code count too
        return False, f"{type(exc).__name__}: {exc}"[:500]
    return True, ""


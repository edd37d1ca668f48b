"""Names inside the sandbox: reach objects by module and qualified name, and write callables as names or source.

Part of the probe (see ``probe.py``): standalone, stdlib only, Python >= 3.8 syntax.

A function, class or builtin is written by the public name it can be imported under (``operator.add``, not
``_operator.add``); a helper of the repo's test suite may be used too, but never a test pytest would collect.
A lambda is written by its one-line source when every name it uses is a builtin or importable.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import inspect
import json
import os
import sys
import types


# --------------------------------------------------------------------------------------- resolving


def resolve(module, qualname, allow_import=True):
    """The object named ``module:qualname``; raises LookupError when it cannot be reached by name."""
    if "<locals>" in qualname or "<lambda>" in qualname or module in (None, "__main__"):
        raise LookupError("%s.%s is not importable" % (module, qualname))
    mod = sys.modules.get(module)
    if mod is None:
        if not allow_import:
            raise LookupError(module)
        mod = import_module(module)
    obj = mod
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def resolve_class(module, qualname, allow_import=True):
    """Like `resolve`, but a module-level singleton stands for its class: construct's ``@singleton class
    VarInt`` leaves the name ``VarInt`` holding the class's one instance, whose methods are still the
    class's (``VarInt._build``)."""
    obj = resolve(module, qualname, allow_import)
    cls = type(obj)
    if not isinstance(obj, type) and cls.__qualname__ == qualname and cls.__module__ == module:
        return cls
    return obj


def singleton_class(modname, name, obj):
    """The class of a module-level singleton named after it (see `resolve_class`), else None."""
    cls = type(obj)
    if not isinstance(obj, type) and cls.__qualname__ == name and cls.__module__ == modname:
        return cls
    return None


def import_module(module):
    """Import ``module``; a module of the repo's test suite is looked for where pytest would have put it
    on sys.path (the repo root for a ``tests`` package, the test file's folder otherwise)."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError:
        if not is_test_module(module):
            raise
    root = os.getcwd()
    top = module.split(".")[0]
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and folder.count(os.sep) - root.count(os.sep) < 3)
        if top + ".py" in files or (top in dirs and os.path.isfile(os.path.join(folder, top, "__init__.py"))):
            if folder not in sys.path:
                sys.path.append(folder)
            return importlib.import_module(module)
    raise ModuleNotFoundError(module)


def type_name(obj):
    cls = type(obj)
    return "%s.%s" % (cls.__module__, cls.__qualname__)


def is_reachable(cls, allow_import=True):
    try:
        return resolve(cls.__module__, cls.__qualname__, allow_import) is cls
    except Exception:
        return False


def canonical(spec):
    return json.dumps(spec, sort_keys=True)


TEST_WORDS = frozenset({"test", "tests", "testing"})


def is_test_module(module):
    """Modules of the test suite (their helpers may be imported by a generated test, their tests may not)."""
    parts = str(module).split(".")
    # `test_x`, `x_test`, `conftest`, and a helper named for the suite (`bidict_test_fixtures`, `my_testing`).
    return any(p.startswith("test") or p == "conftest" or p.endswith("_test") or TEST_WORDS & set(p.split("_"))
               for p in parts)


def is_collectable(obj):
    """Whether pytest would collect ``obj`` if a test module imported it by name (so it must not be)."""
    name = str(getattr(obj, "__name__", ""))
    if name.lower().startswith("test"):
        return True
    return isinstance(obj, type) and any(k.__module__ == "unittest.case" and k.__name__ == "TestCase" for k in obj.__mro__)


def is_private_name(qualname):
    """A qualified name with a part that starts with one underscore (dunders are public protocol)."""
    return any(part.startswith("_") and not (part.startswith("__") and part.endswith("__")) for part in qualname.split("."))


def importable_helper(cls, allow_import=True):
    """A class a generated test may import: public, reachable by name, not from conftest or a collected test."""
    module = str(getattr(cls, "__module__", ""))
    if module.split(".")[-1] == "conftest" or (is_test_module(module) and is_collectable(cls)):
        return False
    if is_private_name(str(getattr(cls, "__qualname__", "_"))):
        return False
    return is_reachable(cls, allow_import)


def _same_object(found, obj):
    # Bound methods (dict.fromkeys) are new objects on each access but compare equal.
    return found is obj or ((inspect.ismethod(obj) or inspect.isbuiltin(obj)) and found == obj)


def public_name(obj, allow_import=True):
    """(module, qualname) under which ``obj`` can be imported, preferring public module names; or None.

    ``operator.add`` lives in ``_operator`` and a package's function may live in a private submodule:
    a parent package (or the name without the leading underscore) that exposes the same object reads better.
    """
    qualname = getattr(obj, "__qualname__", None)
    module = getattr(obj, "__module__", None)
    if module is None and hasattr(obj, "__objclass__"):
        module = obj.__objclass__.__module__  # a descriptor of a builtin type: str.lower
    elif module is None and isinstance(getattr(obj, "__self__", None), type):
        module = obj.__self__.__module__  # a builtin class method: dict.fromkeys
    if not isinstance(qualname, str) or not isinstance(module, str) or module.split(".")[-1] == "conftest":
        return None
    if is_test_module(module) and is_collectable(obj):
        return None
    if is_private_name(qualname):
        return None  # a test keeps to the public API
    parts = module.split(".")
    options = [".".join(parts[:i]) for i in range(1, len(parts))]
    options.append(".".join(parts[:-1] + [parts[-1].lstrip("_")]) if parts[-1].startswith("_") else module)
    options.append(module)
    for option in options:
        if option.split(".")[-1].startswith("_") and option != module:
            continue
        try:
            if _same_object(resolve(option, qualname, allow_import), obj):
                return option, qualname
        except Exception:
            continue
    return None


class NamedObjects:
    """The package's module-level objects that are not functions, classes or modules (``construct.Int8ub``,
    ``construct.this``): a test writes them by name, as the suite does. id(object) -> (module, name), the
    shortest public module first; rebuilt when the package has imported more modules."""

    def __init__(self, package):
        self.package = package
        self.index = {}
        self.seen = -1

    def _refresh(self):
        if len(sys.modules) == self.seen:
            return  # nothing imported since (checked on every encoded object: keep it cheap)
        self.seen, self.index = len(sys.modules), {}
        modules = [m for m in list(sys.modules) if m == self.package or m.startswith(self.package + ".")]
        for modname in sorted(modules, key=lambda m: (m.count("."), m)):
            module = sys.modules.get(modname)
            if module is None or is_private_name(modname):
                continue
            for name, value in list(vars(module).items()):
                if name.startswith("_") or id(value) in self.index or value is None:
                    continue
                if isinstance(value, (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType)):
                    continue
                if type(value) in (bool, int, float, str, bytes, tuple, list, dict, set, frozenset):
                    continue  # plain data: written by value
                self.index[id(value)] = (modname, name, value)

    def name_of(self, obj):
        """(module, name) of a module-level object of the package, or None."""
        self._refresh()
        found = self.index.get(id(obj))
        return (found[0], found[1]) if found is not None and found[2] is obj else None


# ------------------------------------------------------------------------------------------ lambdas


class SourceFiles:
    """Parsed source files, read once each (lambdas are found in them by position)."""

    def __init__(self):
        self.files = {}

    def get(self, path):
        if path not in self.files:
            try:
                with open(path, encoding="utf-8") as fh:
                    text = fh.read()
                self.files[path] = (text, ast.parse(text))
            except (OSError, SyntaxError, ValueError):
                self.files[path] = None
        return self.files[path]


def _lambda_node(tree, code):
    nodes = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda) and n.lineno == code.co_firstlineno]
    if len(nodes) <= 1:
        return nodes[0] if nodes else None
    # Several lambdas start on the line: the one whose body holds the code's first located instruction.
    located = [p for p in code.co_positions() if p[2] and p[0] == code.co_firstlineno] if hasattr(code, "co_positions") else []
    if not located:
        return None
    line, col = located[0][0], located[0][2]
    inside = [n for n in nodes if (n.body.lineno, n.body.col_offset) <= (line, col) <= (n.body.end_lineno, n.body.end_col_offset)]
    return inside[-1] if inside else None


def _bound_names(node):
    names = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.arg):
            names.add(sub.arg)
        elif isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
            names.add(sub.id)  # comprehension targets
    return names


def lambda_spec(func, sources, allow_import=True):
    """A spec for a lambda whose one-line source is readable and whose free names are builtins or importable."""
    code = func.__code__
    if code.co_name != "<lambda>" or func.__closure__:
        return None
    parsed = sources.get(code.co_filename)
    if parsed is None:
        return None
    text, tree = parsed
    node = _lambda_node(tree, code)
    source = ast.get_source_segment(text, node) if node is not None else None
    if not source or "\n" in source:
        return None
    bound, names = _bound_names(node), {}
    for sub in ast.walk(node):
        if not isinstance(sub, ast.Name) or sub.id in bound or sub.id in names:
            continue
        if sub.id in func.__globals__:
            value = func.__globals__[sub.id]
            if isinstance(value, types.ModuleType):
                names[sub.id] = value.__name__
                continue
            where = public_name(value, allow_import)
            if where is None:
                return None
            names[sub.id] = "%s:%s" % where
        elif not hasattr(builtins, sub.id):
            return None
    return {"t": "lambda", "v": source, "names": names}


def lambda_namespace(names):
    """The globals a lambda spec's source is evaluated in."""
    namespace = {"__builtins__": builtins}
    for name, where in sorted(names.items()):
        module, _, qualname = where.partition(":")
        namespace[name] = resolve(module, qualname) if qualname else import_module(module)
    return namespace

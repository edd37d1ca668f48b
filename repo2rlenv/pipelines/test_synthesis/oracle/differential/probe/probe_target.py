"""What the probe learns about a function by importing it: kind, signature, constants, public callers.

Part of the probe (see ``probe.py``): standalone, stdlib only, Python >= 3.8 syntax.

A private target (``_helper``, ``Class._step``) cannot be called by a test that keeps to the public API,
so the probe looks for the public functions and methods whose code names it (directly or through other
private helpers): those are what the tests call instead, and a change of the helper shows through them.
"""

from __future__ import annotations

import inspect
import sys

from probe_names import canonical, is_private_name, public_name, resolve, resolve_class, singleton_class
from probe_values import Encoder

MAX_CONSTANTS = 32
MAX_CALLERS = 4
CALLER_DEPTH = 3
_NO_DEFAULT = object()


class TargetError(LookupError):
    """The target cannot be described (not found, not a class member, private by name mangling)."""


def mangled(owner_name, name):
    """The attribute name Python stores ``Owner.__name`` under (``_Owner__name``); other names as they are."""
    if name.startswith("__") and not name.endswith("__"):
        return "_%s%s" % (owner_name.rsplit(".", 1)[-1].lstrip("_"), name)
    return name




def describe_target(module, qualname):
    """(info, function) of the target; info holds its kind, flags and signature (methods without self/cls)."""
    name = qualname.rsplit(".", 1)[-1]
    owner_name = qualname.rsplit(".", 1)[0] if "." in qualname else None
    kind, owner, func = "function", None, None
    if owner_name is not None:
        owner = resolve_class(module, owner_name)
        if not isinstance(owner, type):
            raise TargetError("%s is not a class" % owner_name)
        raw = inspect.getattr_static(owner, mangled(owner_name, name))
        if isinstance(raw, staticmethod):
            kind, func = "staticmethod", raw.__func__
        elif isinstance(raw, classmethod):
            kind, func = "classmethod", raw.__func__
        elif isinstance(raw, property):
            kind, func = "property", raw.fget
        elif name == "__init__":
            kind, func = "constructor", raw  # called as the class: `Owner(...)`
        else:
            kind, func = "method", raw
    else:
        func = resolve(module, qualname)
    inner = inspect.unwrap(func)
    info = {
        "constants": referenced_constants(inner),
        "kind": kind,
        "owner": owner_name,
        "is_async": inspect.iscoroutinefunction(inner),
        "is_generator": inspect.isgeneratorfunction(inner),
        "params": [],
        "returns": None,
        "init_params": None,
        "import_from": _import_from(module, owner if owner is not None else func, owner_name or qualname),
    }
    try:
        sig = inspect.signature(func)
        params = list(sig.parameters.values())
        if kind in ("method", "classmethod", "property", "constructor") and params:
            params = params[1:]
        info["params"] = [param_info(p) for p in params]
        if sig.return_annotation is not inspect.Signature.empty:
            info["returns"] = annotation_text(sig.return_annotation)
    except (TypeError, ValueError):
        pass
    if kind in ("method", "property") and owner.__init__ is not object.__init__:
        try:
            init = list(inspect.signature(owner.__init__).parameters.values())[1:]
            info["init_params"] = [param_info(p) for p in init]
        except (TypeError, ValueError):
            pass
    elif kind in ("method", "property"):
        info["init_params"] = []
    return info, func


def _import_from(module, obj, qualname):
    """The public module a test should import the target (or its class) from: a parent package re-exporting it."""
    where = public_name(obj) if obj is not None else None
    return where[0] if where is not None and where[1] == qualname else module


def referenced_constants(func):
    """Module-level numbers and short strings the function's code reads by name (also inside small containers).

    A threshold kept in a named constant (``if total >= FREE_SHIPPING_THRESHOLD``) is as much a boundary as
    a literal, but the function's source text does not show its value.
    """
    code = getattr(func, "__code__", None)
    if code is None:
        return []
    encoder = Encoder(for_output=True)
    out, seen = [], set()
    for name in sorted(code_names(code)):
        value = func.__globals__.get(name)
        if isinstance(value, dict):
            members = list(value.keys()) + list(value.values())
        elif type(value) in (list, tuple, set, frozenset):
            members = list(value)
        else:
            members = [value]
        if len(members) > MAX_CONSTANTS:
            continue
        for member in members:
            if type(member) in (int, float) or (type(member) is str and len(member) <= 20):
                spec = encoder.encode(member)
                if canonical(spec) not in seen:
                    seen.add(canonical(spec))
                    out.append(spec)
    return out[:MAX_CONSTANTS]


def code_names(code):
    """Global and attribute names a code object (and the functions nested in it) reads."""
    names, stack = set(), [code]
    while stack:
        current = stack.pop()
        names.update(current.co_names)
        stack.extend(c for c in current.co_consts if inspect.iscode(c))
    return names


def annotation_text(annotation):
    if annotation is inspect.Parameter.empty:
        return None
    if isinstance(annotation, str):
        return annotation
    return inspect.formatannotation(annotation)


def param_info(param):
    has_default = param.default is not inspect.Parameter.empty
    return {
        "name": param.name,
        "kind": param.kind.name.lower(),
        "annotation": annotation_text(param.annotation),
        "has_default": has_default,
        "default": Encoder(for_output=True).encode(param.default) if has_default else None,
    }


def defaults_of(func):
    """Parameter name -> default object, read from the function (after unwrapping decorators)."""
    if func is None:
        return {}
    func = inspect.unwrap(func)
    code = getattr(func, "__code__", None)
    if code is None:
        return {}
    positional = code.co_varnames[: code.co_argcount]
    values = func.__defaults__ or ()
    out = dict(zip(positional[len(positional) - len(values):], values))
    out.update(func.__kwdefaults__ or {})
    return out


class Unbound(Exception):
    """An argument of a call that cannot be written as a value spec; ``args[0]`` names its type."""


CO_VARARGS = 0x04
CO_VARKEYWORDS = 0x08


def bind_frame(code, f_locals, defaults, skip_first, encoder):
    """A call's arguments from its frame at entry: (args, kwargs) of value specs; raises Unbound.

    Parameters after the first one with a default are passed by keyword and left out when they
    hold their default (the very object, or an equal spec), which is how a person writes the call.
    A default that cannot be re-created (a module-level instance) is fine as long as it is left out.
    """
    names = code.co_varnames
    n_pos, n_kwonly, n_posonly = code.co_argcount, code.co_kwonlyargcount, code.co_posonlyargcount
    positional = list(names[:n_pos])
    kwonly = list(names[n_pos:n_pos + n_kwonly])
    idx = n_pos + n_kwonly
    varargs = varkw = None
    if code.co_flags & CO_VARARGS:
        varargs, idx = names[idx], idx + 1
    if code.co_flags & CO_VARKEYWORDS:
        varkw = names[idx]
    if skip_first:
        positional, n_posonly = positional[1:], max(0, n_posonly - 1)
    extra = tuple(f_locals.get(varargs, ())) if varargs else ()
    args, kwargs, by_keyword = [], {}, False

    def spec_of(value):
        spec = encoder.encode(value)
        if spec is None:
            raise Unbound(encoder.failed)
        return spec

    def keyword(name):
        value, default = f_locals[name], defaults.get(name, _NO_DEFAULT)
        if value is default:
            return
        spec = spec_of(value)
        if default is _NO_DEFAULT or canonical(spec) != canonical(Encoder(for_output=True).encode(default)):
            kwargs[name] = spec

    for j, name in enumerate(positional):
        if not extra and j >= n_posonly and name in defaults:
            by_keyword = True
        if by_keyword:
            keyword(name)
        else:
            args.append(spec_of(f_locals[name]))
    args.extend(spec_of(v) for v in extra)
    for name in kwonly:
        keyword(name)
    if varkw:
        for name, value in f_locals.get(varkw, {}).items():
            kwargs[name] = spec_of(value)
    return args, kwargs


# ------------------------------------------------------------------------------------ public callers


def _members(package):
    """(module, qualname, function) of every function and method defined in the package's loaded modules."""
    for modname in sorted(m for m in list(sys.modules) if m == package or m.startswith(package + ".")):
        mod = sys.modules.get(modname)
        for name, obj in sorted(vars(mod).items()) if mod is not None else ():
            if getattr(obj, "__module__", None) != modname:
                continue
            obj = singleton_class(modname, name, obj) or obj
            if inspect.isfunction(obj):
                yield modname, name, obj
            elif isinstance(obj, type):
                for attr, raw in sorted(vars(obj).items()):
                    func = raw.__func__ if isinstance(raw, (staticmethod, classmethod)) else raw.fget if isinstance(raw, property) else raw
                    if inspect.isfunction(func):
                        yield modname, "%s.%s" % (name, attr), func


def entry_names(module, qualname):
    """What a public-API test calls to reach the target: [(module, qualname)], nearest first.

    The target itself when its name is public; a method of a private base class through the public
    subclasses that inherit it; any other private function or method through the public code naming it.
    """
    describe_target(module, qualname)  # raises when the target cannot be found at all
    if not is_private_name(qualname):
        return [(module, qualname)]
    owner, _, name = qualname.rpartition(".")
    if owner and not is_private_name(name):
        inherited = public_subclass_members(module, owner, name)
        if inherited:
            return inherited
    return public_callers(module, qualname)


def public_subclass_members(module, owner_name, name):
    """``Sub.name`` for public subclasses of the private class ``owner_name`` that inherit its ``name``."""
    owner = resolve_class(module, owner_name)
    raw = owner.__dict__.get(name)
    found = []
    for cmod, cname, cls in _classes(module.split(".")[0]):
        if cls is owner or is_private_name(cname) or not issubclass(cls, owner):
            continue
        if inspect.getattr_static(cls, name, None) is raw:
            found.append((cmod, "%s.%s" % (cname, name)))
    return found[:MAX_CALLERS]


def _classes(package):
    for modname in sorted(m for m in list(sys.modules) if m == package or m.startswith(package + ".")):
        mod = sys.modules.get(modname)
        for name, obj in sorted(vars(mod).items()) if mod is not None else ():
            obj = singleton_class(modname, name, obj) or obj
            if isinstance(obj, type) and getattr(obj, "__module__", None) == modname:
                yield modname, name, obj


def public_callers(module, qualname):
    """Public functions and methods whose code names the target, found through private helpers too.

    For a method target, methods of its own class (and its bases and subclasses) count, and any other code
    only when it also names the class (it builds the object: a handler made inside a public function);
    "names" means the code reads the name (``_helper(...)`` or ``self._step(...)``), which is how Python
    code reaches a private helper.
    Returns [(module, qualname)] nearest first, at most MAX_CALLERS.
    """
    package = module.split(".")[0]
    members = list(_members(package))
    found, frontier, seen = [], [(module, qualname)], {(module, qualname)}
    for _ in range(CALLER_DEPTH):
        nxt = []
        for mod, qual in frontier:
            name, owner = qual.rsplit(".", 1)[-1], qual.rsplit(".", 1)[0] if "." in qual else None
            name = mangled(owner, name) if owner else name
            for cmod, cqual, func in members:
                if (cmod, cqual) in seen:
                    continue
                names = code_names(func.__code__)
                if name not in names:
                    continue
                cowner = cqual.rsplit(".", 1)[0] if "." in cqual else None
                if owner is not None and (cowner is None or not _related(cmod, cowner, mod, owner)) \
                        and owner.rsplit(".", 1)[-1] not in names:
                    # Another class's method, or a function: it reaches this method only on an object it
                    # makes itself (it names the class too), e.g. a parser's handler built inside the public
                    # function and its method registered as a callback (xmltodict's parse).
                    continue
                seen.add((cmod, cqual))
                nxt.append((cmod, cqual))
                if not is_private_name(cqual):
                    found.append((cmod, cqual))
        frontier = [c for c in nxt if is_private_name(c[1])]
    return found[:MAX_CALLERS]


def _related(cmod, cowner, mod, owner):
    """Whether class ``cmod.cowner`` is ``mod.owner`` or one of its subclasses or bases."""
    try:
        a, b = resolve_class(cmod, cowner), resolve_class(mod, owner)
    except Exception:
        return False
    return isinstance(a, type) and isinstance(b, type) and (issubclass(a, b) or issubclass(b, a))

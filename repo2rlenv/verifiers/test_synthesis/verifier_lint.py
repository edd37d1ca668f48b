"""Static lint of an agent's test file: refuse ways a test could tell A from B without testing behaviour.

The reward pays for tests that pass on A and fail on B. A policy can earn that without exercising the
function by pinning the source (reading or hashing the module, `inspect.getsource`, code objects), by
sniffing the grader (git, mtimes, the grading paths, processes), or by tampering with the run (tracing,
`sys.modules`, builtins, plugins, writing the reward file). The runtime defences (A′, pristine copies at
one path, fixed mtimes, an unprivileged uid) stop most of these on their own; this lint refuses them up
front, with line numbers, so a refused submission costs no test run at all.

It is deliberately narrow: ordinary tests — importing the module under test, `pytest.raises`,
`pytest.approx`, parametrize, `tmp_path`, `monkeypatch` of the repo's own functions — pass untouched.
It is a first filter with clear messages, never the barrier: a blacklist cannot be complete, and what it
misses the runtime refuses or makes worthless (`verifier_guard`, `verifier_kernel`, `verifier_twins`).

Stdlib only: this file is copied verbatim into every task's `tests/` directory.
"""

from __future__ import annotations

import ast
import re
from dataclasses import asdict, dataclass

# --------------------------------------------------------------------------- rule tables

RULES: dict[str, str] = {
    "syntax": "the file does not parse",
    "source-introspection": "reads source code or code objects instead of testing behaviour",
    "file-read": "reads repository source files or locates them on disk",
    "process": "starts, forks, signals or exits processes",
    "vcs": "looks at version control",
    "file-times": "looks at file timestamps or inodes",
    "grader-path": "touches the grader's paths",
    "tracing": "installs tracers or inspects frames",
    "native": "uses native code access",
    "gc-scan": "scans the garbage collector's objects",
    "import-system": "mutates sys.modules or the import system",
    "builtins": "patches builtins",
    "dynamic-code": "builds code or names at runtime (eval/exec/__import__/computed getattr)",
    "plugin": "loads or registers pytest plugins",
    "entropy": "uses a source of randomness that cannot be seeded",
    "coverage": "touches coverage measurement",
    "file-facts": "looks at file sizes, inodes or other on-disk facts of files",
    "native-ids": "looks at process, thread or kernel ids",
    "refcount": "looks at reference counts, interning or allocation counts",
    "pytest-internals": "uses pytest's internal modules",
}

# Importing any of these is a finding by itself.
FORBIDDEN_MODULES: dict[str, str] = {
    "subprocess": "process", "pty": "process", "multiprocessing": "process", "atexit": "process",
    "ctypes": "native", "_ctypes": "native", "cffi": "native",
    "dis": "source-introspection", "linecache": "source-introspection", "tokenize": "source-introspection",
    "marshal": "source-introspection", "trace": "tracing", "bdb": "tracing", "pdb": "tracing",
    "py_compile": "file-read", "compileall": "file-read", "site": "file-read", "sysconfig": "file-read",
    "importlib.resources": "file-read", "importlib.machinery": "import-system",
    "code": "dynamic-code", "codeop": "dynamic-code",
    "git": "vcs", "dulwich": "vcs", "pygit2": "vcs",
    "secrets": "entropy",
    "coverage": "coverage", "pytest_cov": "coverage",
    "_pytest": "pytest-internals", "readline": "file-read", "tracemalloc": "tracing", "faulthandler": "tracing",
    "_posixsubprocess": "process", "_xxsubinterpreters": "process", "_interpreters": "process",
    "concurrent.interpreters": "process", "_thread": "native-ids", "_imp": "import-system",
    "types.CodeType": "dynamic-code", "types.FrameType": "tracing",
}

# Dotted names refused wherever they are used (the name itself or anything below it).
FORBIDDEN_NAMES: dict[str, str] = {
    **{f"inspect.{n}": "source-introspection" for n in (
        "getsource", "getsourcelines", "getsourcefile", "getfile", "findsource", "getcomments",
        "getblock", "getclosurevars")},
    **{f"inspect.{n}": "tracing" for n in (
        "currentframe", "stack", "trace", "getframeinfo", "getouterframes", "getinnerframes")},
    **{f"sys.{n}": "tracing" for n in (
        "settrace", "setprofile", "gettrace", "getprofile", "_getframe", "_current_frames", "monitoring",
        "addaudithook")},
    **{f"threading.{n}": "tracing" for n in ("settrace", "setprofile", "gettrace", "getprofile",
                                              "settrace_all_threads", "setprofile_all_threads")},
    **{f"os.{n}": "process" for n in (
        "system", "popen", "fork", "forkpty", "kill", "killpg", "_exit", "abort", "register_at_fork")},
    # Process ids count the runs in a fresh container (`getpid() - getppid()` grows run by run), and the
    # variants' order is the secret a run counter would leak; no behaviour test needs them.
    **{f"os.{n}": "process" for n in ("getpid", "getppid", "getpgrp", "getpgid", "getsid")},
    "concurrent.futures.ProcessPoolExecutor": "process", "signal.pthread_kill": "process",
    **{f"os.{n}": "file-times" for n in ("stat", "lstat", "fstat", "utime")},
    **{f"os.path.{n}": "file-times" for n in ("getmtime", "getctime", "getatime")},
    **{f"gc.{n}": "gc-scan" for n in ("get_objects", "get_referrers", "get_referents")},
    **{f"importlib.util.{n}": "file-read" for n in (
        "find_spec", "spec_from_file_location", "module_from_spec", "source_from_cache", "cache_from_source")},
    "importlib.__import__": "dynamic-code",
    **{f"pkgutil.{n}": "file-read" for n in ("get_data", "get_loader", "find_loader")},
    **{f"sys.{n}": "import-system" for n in ("meta_path", "path_hooks", "path_importer_cache")},
    **{f"sys.{n}": "file-read" for n in ("prefix", "base_prefix", "exec_prefix", "base_exec_prefix")},
    "hashlib.file_digest": "file-read",
    "os.urandom": "entropy", "os.getrandom": "entropy", "random.SystemRandom": "entropy",
    "uuid.uuid1": "entropy", "uuid.uuid4": "entropy",
    **{f"traceback.{n}": "tracing" for n in (
        "walk_tb", "walk_stack", "extract_tb", "extract_stack", "StackSummary", "FrameSummary", "TracebackException",
        "format_tb", "format_stack", "print_tb", "print_stack", "format_exception", "print_exception", "format_exc",
        "print_exc")},
    "inspect.getmembers": "source-introspection", "inspect.getmembers_static": "source-introspection",
    "inspect.unwrap": "source-introspection", "inspect.getmodule": "file-read",
    **{f"os.path.{n}": "file-facts" for n in ("getsize", "samefile", "sameopenfile", "samestat")},
    **{f"os.{n}": "file-facts" for n in ("statvfs", "fstatvfs", "readlink", "scandir", "listxattr", "getxattr")},
    **{f"os.{n}": "native-ids" for n in ("gettid", "getuid", "geteuid", "getgid", "getegid", "getloadavg", "times")},
    **{f"threading.{n}": "native-ids" for n in ("get_native_id", "get_ident", "_current_frames")},
    **{f"sys.{n}": "refcount" for n in ("getrefcount", "getallocatedblocks", "intern", "getsizeof", "_clear_type_cache")},
    **{f"gc.{n}": "refcount" for n in ("get_count", "get_stats", "get_freeze_count")},
    "shutil.disk_usage": "file-facts",
    **{f"builtins.{n}": "dynamic-code" for n in ("eval", "exec", "compile", "__import__")},
    "importlib.reload": "import-system", "importlib.invalidate_caches": "import-system",
}
FORBIDDEN_PREFIXES: dict[str, str] = {"os.exec": "process", "os.spawn": "process", "os.posix_spawn": "process"}

FORBIDDEN_BUILTINS: dict[str, str] = {
    "eval": "dynamic-code", "exec": "dynamic-code", "compile": "dynamic-code", "__import__": "dynamic-code",
    "breakpoint": "tracing",
}

CODE_ATTRS = frozenset({
    "__code__", "co_code", "co_consts", "co_names", "co_varnames", "co_filename", "co_firstlineno",
    "co_lnotab", "co_linetable", "co_lines", "co_positions", "co_exceptiontable", "co_cellvars",
    "co_freevars", "co_qualname", "co_name", "co_flags", "co_nlocals", "co_stacksize",
    "gi_code", "gi_frame", "cr_code", "cr_frame", "ag_code", "ag_frame"})
FRAME_ATTRS = frozenset({"f_code", "f_locals", "f_globals", "f_back", "f_lineno", "f_trace", "tb_frame",
                         "tb_lineno", "tb_lasti"})
# Attribute names refused on any object, and as string constants (getattr, vars()[...], setattr).
FORBIDDEN_ATTRS: dict[str, str] = {
    **{a: "source-introspection" for a in CODE_ATTRS}, **{a: "tracing" for a in FRAME_ATTRS},
    "__file__": "file-read", "__spec__": "file-read", "__loader__": "file-read", "__cached__": "file-read",
    "__builtins__": "builtins", "pluginmanager": "plugin", "_getframe": "tracing",
    **{f"st_{t}{ns}": "file-times" for t in ("mtime", "ctime", "atime", "birthtime") for ns in ("", "_ns")},
    "st_ino": "file-times", "st_size": "file-facts", "st_nlink": "file-facts", "st_dev": "file-facts",
    "st_blocks": "file-facts", "__closure__": "source-introspection", "cell_contents": "source-introspection",
    "gi_frame": "tracing", "cr_frame": "tracing", "ag_frame": "tracing", "f_lasti": "tracing",
}
# Method names refused on any object (`Path(x).stat()`, `entry.inode()`).
FORBIDDEN_METHODS: dict[str, str] = {"stat": "file-facts", "lstat": "file-facts", "inode": "file-facts",
                                     "samefile": "file-facts", "readlink": "file-facts"}

# Paths a behaviour test has no business naming (plain /tmp is left to the runtime: tests of path
# functions name it as data).
GRADER_PATHS = ("/logs", "/tests", "/workspace", "/solution", "/oracle", "/opt/venv", "/proc", "/sys", "/dev/shm",
                "/dev/fd", "/dev/mqueue", "/run/lock")
_PY_FILE = re.compile(r"\.py[ciow]?$|\*\.py")
FILE_CALLS = frozenset({"open", "read_text", "read_bytes", "glob", "rglob", "iglob", "listdir", "scandir",
                        "walk", "fnmatch", "filter", "get_source", "get_data", "get_code"})
HASH_MODULES = ("hashlib.", "zlib.", "binascii.")
READ_CALLS = frozenset({"open", "read", "read_text", "read_bytes", "readlines", "getsource"})
SYS_MODULES_READS = frozenset({"get", "keys", "values", "items", "copy", "__contains__"})
BUILTINS_PATCH_OK = frozenset({"input", "print"})  # monkeypatching these is how CLIs are tested
PATCHERS = frozenset({"setattr", "delattr", "setitem", "delitem"})


@dataclass(frozen=True, slots=True)
class Finding:
    """One refused construct, with where it is and why."""

    line: int
    col: int
    rule: str
    message: str

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


# --------------------------------------------------------------------------- the checker

class _Linter(ast.NodeVisitor):
    def __init__(self) -> None:
        self.aliases: dict[str, str] = {}
        self.parents: dict[ast.AST, ast.AST] = {}
        self.findings: dict[tuple[int, str, str], Finding] = {}

    # ---- helpers
    def flag(self, node: ast.AST, rule: str, what: str) -> None:
        line, col = getattr(node, "lineno", 0), getattr(node, "col_offset", 0)
        self.findings.setdefault((line, rule, what), Finding(line, col, rule, f"{what}: {RULES[rule]}"))

    def qualname(self, node: ast.AST) -> str | None:
        """Dotted name of an expression rooted in an imported name; None for anything else.

        Only imported roots count: a local variable called `site`, `code` or `trace` is not the module.
        """
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name) or node.id not in self.aliases:
            return None
        parts.append(self.aliases[node.id])
        return ".".join(reversed(parts))

    def check_qualname(self, node: ast.AST, name: str) -> None:
        for forbidden, rule in FORBIDDEN_NAMES.items():
            if name == forbidden or name.startswith(forbidden + "."):
                self.flag(node, rule, name)
        for prefix, rule in FORBIDDEN_PREFIXES.items():
            if name.startswith(prefix):
                self.flag(node, rule, name)
        for module, rule in FORBIDDEN_MODULES.items():
            if name == module or name.startswith(module + "."):
                self.flag(node, rule, name)

    def check_import(self, node: ast.AST, module: str) -> None:
        for forbidden, rule in FORBIDDEN_MODULES.items():
            if module == forbidden or module.startswith(forbidden + "."):
                self.flag(node, rule, f"import {module}")

    # ---- imports
    def bind(self, node: ast.Import | ast.ImportFrom) -> None:
        for alias in node.names:
            if isinstance(node, ast.Import):
                head = alias.name.split(".")[0]
                self.aliases[alias.asname or head] = alias.name if alias.asname else head
            elif not node.level:  # relative imports name test helpers, never stdlib modules
                self.aliases[alias.asname or alias.name] = f"{node.module or ''}.{alias.name}"

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.check_import(node, alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            return
        module = node.module or ""
        self.check_import(node, module)
        for alias in node.names:
            full = f"{module}.{alias.name}"
            self.check_import(node, full)
            self.check_qualname(node, full)

    # ---- names and attributes
    def visit_Name(self, node: ast.Name) -> None:
        if node.id in FORBIDDEN_BUILTINS and node.id not in self.aliases:
            self.flag(node, FORBIDDEN_BUILTINS[node.id], node.id)
        if node.id == "__builtins__":
            self.flag(node, "builtins", node.id)
        resolved = self.aliases.get(node.id)
        if resolved:
            self.check_qualname(node, resolved)
        if node.id == "pytest_plugins" and isinstance(node.ctx, ast.Store):
            self.flag(node, "plugin", "pytest_plugins")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in FORBIDDEN_ATTRS:
            self.flag(node, FORBIDDEN_ATTRS[node.attr], f".{node.attr}")
        name = self.qualname(node)
        if name:
            self.check_qualname(node, name)
            if name == "sys.modules":
                self.check_sys_modules(node)
            if name.startswith("builtins.") and isinstance(node.ctx, (ast.Store, ast.Del)):
                self.flag(node, "builtins", name)
            if name == "builtins.__dict__":
                self.flag(node, "builtins", name)
        self.generic_visit(node)

    def check_sys_modules(self, node: ast.Attribute) -> None:
        parent = self.parents.get(node)
        if isinstance(parent, ast.Subscript) and isinstance(parent.ctx, (ast.Store, ast.Del)):
            self.flag(node, "import-system", "sys.modules[...] assignment")
        elif isinstance(parent, ast.Attribute) and parent.attr not in SYS_MODULES_READS:
            self.flag(node, "import-system", f"sys.modules.{parent.attr}")
        elif isinstance(parent, ast.Call) and node in parent.args + [k.value for k in parent.keywords]:
            self.flag(node, "import-system", "sys.modules passed to a call")
        elif isinstance(parent, (ast.Assign, ast.AugAssign, ast.Delete)) and node is not getattr(
                parent, "value", None):
            self.flag(node, "import-system", "sys.modules rebound")

    # ---- constants (and strings the file builds from constants: "/pr" + "oc", f"/{'proc'}")
    def visit_BinOp(self, node: ast.BinOp) -> None:
        folded = _fold(node)
        if isinstance(folded, str) and self.parents.get(node).__class__ is not ast.BinOp:
            self.check_string(node, folded)
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        key = node.slice
        text = _fold(key) if not isinstance(key, ast.Constant) else None  # constants: visit_Constant
        if isinstance(text, str):
            if text in FORBIDDEN_ATTRS:
                self.flag(node, FORBIDDEN_ATTRS[text], f"[{text!r}]")
            if text in FORBIDDEN_BUILTINS:
                self.flag(node, FORBIDDEN_BUILTINS[text], f"[{text!r}]")
        if isinstance(key, ast.Constant) and key.value in FORBIDDEN_BUILTINS:
            self.flag(node, FORBIDDEN_BUILTINS[key.value], f"[{key.value!r}]")
        self.generic_visit(node)

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        folded = _fold(node)
        if isinstance(folded, str):
            self.check_string(node, folded)
        self.generic_visit(node)

    def check_string(self, node: ast.AST, text: str) -> None:
        if any(text == p or text.startswith(p + "/") for p in GRADER_PATHS) or "proc/self" in text \
                or "/proc/" in text:
            self.flag(node, "grader-path", repr(text[:60]))

    def visit_Constant(self, node: ast.Constant) -> None:
        if not isinstance(node.value, str):
            return
        text = node.value
        if text in FORBIDDEN_ATTRS and (text.startswith("__") or self.names_an_attribute(node)):
            self.flag(node, FORBIDDEN_ATTRS[text], repr(text))
        if self.parents.get(node).__class__ not in (ast.BinOp, ast.JoinedStr):
            self.check_string(node, text)
        if "site-packages" in text or "dist-packages" in text:
            self.flag(node, "file-read", repr(text[:60]))

    def names_an_attribute(self, node: ast.Constant) -> bool:
        """Whether a string is used as an attribute or key name: getattr(x, "f_locals"), vars(x)["co_code"]."""
        parent = self.parents.get(node)
        if isinstance(parent, ast.Subscript):
            return True
        return (isinstance(parent, ast.Call) and len(parent.args) > 1 and parent.args[1] is node
                and isinstance(parent.func, ast.Name) and parent.func.id in ("getattr", "setattr", "delattr", "hasattr"))

    # ---- calls
    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        name = self.qualname(func) or ""
        terminal = func.attr if isinstance(func, ast.Attribute) else (func.id if isinstance(func, ast.Name) else "")
        if terminal in FILE_CALLS or name in ("io.open", "codecs.open"):
            self.check_file_call(node, terminal)
        if name.startswith(HASH_MODULES) and self.reads_something(node):
            self.flag(node, "file-read", f"{name} of file contents")
        if terminal in ("getattr", "setattr", "delattr", "hasattr") and len(node.args) >= 2:
            # monkeypatch.setattr("pkg.mod.name", value) names its target in the first argument
            dotted_form = isinstance(node.args[0], ast.Constant)
            if not dotted_form and not isinstance(node.args[1], ast.Constant):
                self.flag(node, "dynamic-code", f"{terminal} with an attribute name that is not a literal")
        if terminal in ("attrgetter", "methodcaller") and any(not isinstance(a, ast.Constant) for a in node.args):
            self.flag(node, "dynamic-code", f"{terminal} with a name that is not a literal")
        if terminal in ("getattr", "setattr", "delattr", "hasattr", "attrgetter", "methodcaller"):
            self.check_attribute_names(node, terminal, name)
        if terminal == "vars" and node.args and self.qualname(node.args[0]) == "builtins":
            self.flag(node, "builtins", "vars(builtins)")
        if name in ("importlib.import_module", "importlib.__import__") and node.args:
            arg = node.args[0]
            if not isinstance(arg, ast.Constant):
                self.flag(node, "dynamic-code", "import_module of a computed name")
            elif isinstance(arg.value, str):
                self.check_import(node, arg.value)
        if terminal in FORBIDDEN_METHODS and isinstance(func, ast.Attribute) and name == "":
            self.flag(node, FORBIDDEN_METHODS[terminal], f".{terminal}()")
        if name in ("random.seed", "random.Random") and not (
                node.args and isinstance(node.args[0], ast.Constant)):
            self.flag(node, "entropy", f"{name} without a constant seed")
        if terminal in PATCHERS and node.args:
            self.check_builtins_patch(node, terminal)
        self.generic_visit(node)

    def check_attribute_names(self, node: ast.Call, terminal: str, name: str) -> None:
        """The attribute names a call reaches by string — getattr(os, "st" + "at"), attrgetter("tb_frame.f_back") —
        checked as if written out: each dotted part against the refused attributes and methods, and a
        getattr on an imported module as that module's name."""
        strings = node.args[1:2] if terminal in ("getattr", "setattr", "delattr", "hasattr") else node.args[:1]
        if name == "operator.methodcaller" or terminal == "methodcaller":
            strings = node.args[:1]
        for arg in strings:
            text = _fold(arg)
            if not isinstance(text, str):
                continue
            for part in text.split("."):
                if part in FORBIDDEN_ATTRS:
                    self.flag(node, FORBIDDEN_ATTRS[part], f"{terminal}(…{part!r}…)")
                if part in FORBIDDEN_METHODS and terminal == "methodcaller":
                    self.flag(node, FORBIDDEN_METHODS[part], f"methodcaller({part!r})")
            if terminal in ("getattr", "hasattr") and node.args:
                owner = self.qualname(node.args[0])
                if owner:
                    self.check_qualname(node, f"{owner}.{text}")
                    if owner == "builtins" and text in FORBIDDEN_BUILTINS:
                        self.flag(node, FORBIDDEN_BUILTINS[text], f"getattr(builtins, {text!r})")

    def check_file_call(self, node: ast.Call, terminal: str) -> None:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Constant) and isinstance(sub.value, str) and _PY_FILE.search(sub.value):
                self.flag(node, "file-read", f"{terminal}() of {sub.value!r}")

    def reads_something(self, node: ast.Call) -> bool:
        for sub in ast.walk(node):
            if sub is not node and isinstance(sub, ast.Call):
                f = sub.func
                term = f.attr if isinstance(f, ast.Attribute) else (f.id if isinstance(f, ast.Name) else "")
                if term in READ_CALLS:
                    return True
        return False

    def check_builtins_patch(self, node: ast.Call, terminal: str) -> None:
        target = node.args[0]
        if isinstance(target, ast.Constant) and isinstance(target.value, str):
            if target.value.startswith("builtins.") and target.value[9:] not in BUILTINS_PATCH_OK:
                self.flag(node, "builtins", f"{terminal}({target.value!r})")
            return
        if self.qualname(target) in ("builtins", "builtins.__dict__") or self.names_builtins_module(target):
            attr = node.args[1] if len(node.args) > 1 else None
            if not (isinstance(attr, ast.Constant) and attr.value in BUILTINS_PATCH_OK):
                self.flag(node, "builtins", f"{terminal}(builtins, ...)")

    def names_builtins_module(self, node: ast.AST) -> bool:
        """`sys.modules["builtins"]` (or a folded key naming it)."""
        return (isinstance(node, ast.Subscript) and self.qualname(node.value) == "sys.modules"
                and _fold(node.slice) == "builtins")

    def run(self, tree: ast.Module) -> list[Finding]:
        for parent in ast.walk(tree):
            for child in ast.iter_child_nodes(parent):
                self.parents[child] = parent
        # Aliases first, so a use above its (function-level) import still resolves.
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                self.bind(node)
        self.visit(tree)
        return sorted(self.findings.values(), key=lambda f: (f.line, f.col, f.rule))


def _fold(node: ast.AST) -> object:
    """The value of a string built only from constants (`+` and f-strings), else None."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _fold(node.left), _fold(node.right)
        return left + right if isinstance(left, str) and isinstance(right, str) else None
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            part = _fold(value.value) if isinstance(value, ast.FormattedValue) and value.format_spec is None \
                and value.conversion == -1 else _fold(value)
            if not isinstance(part, str):
                return None
            parts.append(part)
        return "".join(parts)
    return None


def declared_encoding(raw: bytes) -> str:
    """The encoding Python decodes `raw` with (its BOM or PEP 263 declaration; UTF-8 when none), as the
    tokenizer names it; a declaration Python would refuse is returned as it is written."""
    import io
    import tokenize

    try:
        return tokenize.detect_encoding(io.BytesIO(raw).readline)[0]
    except SyntaxError as exc:
        return f"unusable ({exc})"


def lint_source(source: str, filename: str = "<submission>") -> list[Finding]:
    """Findings for a test file's source (empty list: nothing refused). A file nested too deeply for the
    parser or the walk is the submission's finding, never the verifier's error."""
    try:
        tree = ast.parse(source, filename=filename)
    except (SyntaxError, ValueError) as exc:
        what = f"{type(exc).__name__}: {getattr(exc, 'msg', exc)}"
        return [Finding(getattr(exc, "lineno", 0) or 0, getattr(exc, "offset", 0) or 0, "syntax",
                        f"{what}: {RULES['syntax']}")]
    except (RecursionError, MemoryError) as exc:
        return [Finding(0, 0, "syntax", f"{type(exc).__name__}: nested too deeply to read: {RULES['syntax']}")]
    try:
        return _Linter().run(tree)
    except (RecursionError, MemoryError) as exc:
        return [Finding(0, 0, "syntax", f"{type(exc).__name__}: nested too deeply to read: {RULES['syntax']}")]

"""The submission lint: ordinary tests pass untouched; source pinning, sniffing and tampering are refused."""

from __future__ import annotations

import textwrap

import pytest

from repo2rlenv.verifiers.test_synthesis import verifier_lint as vlint
from repo2rlenv.verifiers.test_synthesis.verifier_lint import lint_source

ALLOWED = {
    "plain asserts": """
        from shopcalc.pricing import apply_discount
        def test_a():
            assert apply_discount(10, 100) == 5
    """,
    "raises, approx, parametrize": """
        import pytest
        from shopcalc import pricing
        @pytest.mark.parametrize("pct, expected", [(10, 9.0), (0, 10)])
        def test_b(pct, expected):
            assert pricing.apply_discount(10, pct) == pytest.approx(expected)
            with pytest.raises(ValueError, match="range"):
                pricing.apply_discount(10, -1)
    """,
    "fixtures and monkeypatch of the repo's own functions": """
        import pytest
        import shopcalc.pricing as pricing
        @pytest.fixture
        def cart(tmp_path):
            return tmp_path / "cart.json"
        def test_c(cart, monkeypatch, capsys, caplog):
            monkeypatch.setattr(pricing, "with_tax", lambda price: price)
            monkeypatch.setattr("shopcalc.pricing.TAX", 0.0)
            monkeypatch.setattr("builtins.input", lambda prompt: "y")
            monkeypatch.setenv("SHOP_CURRENCY", "EUR")
            cart.write_text("{}")
            assert cart.read_text() == "{}"
            assert (cart.parent / "out.py").name == "out.py"
    """,
    "local names that shadow module names": """
        def test_d():
            code, site, trace, git_url = 200, "example.org", [], "https://example.org/x.git"
            stat = {"mtime": 1, "co_name": "ACME", "st_size": 3}
            assert code and site and git_url.endswith(".git") and stat and "git" != "hg"
    """,
    "docstrings, classes, helpers, bare __file__": """
        import json
        from pathlib import Path
        from shopcalc.pricing import apply_discount
        DATA = Path(__file__).parent / "data.json"
        class TestDiscount:
            def test_doc(self):
                assert "discount" in apply_discount.__doc__
                assert getattr(apply_discount, "__name__") == "apply_discount"
            def test_helper(self):
                assert getattr(apply_discount, "__name__")
                assert json.loads("[1]") == [1]
    """,
    "strings that name things as data": """
        from shopcalc import pricing
        def test_f():
            assert pricing.describe("code") != "site"
            assert pricing.normalize("/tmp/x/../y") == "/tmp/y"
            assert "git" in ["git", "hg"] and pricing.TAX
    """,
    "random with a constant seed, threads": """
        import random, threading
        def test_e():
            rng = random.Random(4)
            random.seed(1)
            t = threading.Thread(target=lambda: None)
            t.start(); t.join()
            assert rng.random() < 1
    """,
}

REFUSED = [  # (name, source, rule that must be among the findings, line)
    ("inspect.getsource", "import inspect\nimport m\ninspect.getsource(m.f)\n", "source-introspection", 3),
    ("from-import alias", "from inspect import getsource as gs\ngs(len)\n", "source-introspection", 1),
    ("code object", "import m\nm.f.__code__.co_code\n", "source-introspection", 2),
    ("getattr of a code attribute", "import m\ngetattr(m.f, '__code__')\n", "source-introspection", 2),
    ("getattr of co_code", "import m\ngetattr(m.f.__class__, 'co_code')\n", "source-introspection", 2),
    ("frame locals by key", "import m\nm.frame_dict['f_locals']\n", "tracing", 2),
    ("computed getattr", "import m\ngetattr(m.f, '__co' + 'de__')\n", "dynamic-code", 2),
    ("dis", "import dis\n", "source-introspection", 1),
    ("module __file__", "import m\nopen(m.__file__).read()\n", "file-read", 2),
    ("open of a .py path", "open('src/shopcalc/pricing.py').read()\n", "file-read", 1),
    ("Path.read_text of .py", "from pathlib import Path\nPath('x/pricing.py').read_text()\n", "file-read", 2),
    ("glob for sources", "import glob\nglob.glob('**/*.py')\n", "file-read", 2),
    ("hash of a file", "import hashlib\nhashlib.sha256(open('x', 'rb').read())\n", "file-read", 2),
    ("find_spec", "import importlib.util\nimportlib.util.find_spec('m').origin\n", "file-read", 2),
    ("site-packages path", "p = '/usr/lib/python3/site-packages/m.py'\n", "file-read", 1),
    ("subprocess", "import subprocess\nsubprocess.run(['ls'])\n", "process", 1),
    ("os.system", "import os\nos.system('ls')\n", "process", 2),
    ("os.exec*", "import os\nos.execv('/bin/ls', ['ls'])\n", "process", 2),
    ("os.fork", "import os\nos.fork()\n", "process", 2),
    ("os._exit", "import os\nos._exit(0)\n", "process", 2),
    ("GitPython", "import git\n", "vcs", 1),
    ("os.stat", "import os\nos.stat('x')\n", "file-times", 2),
    ("getmtime", "import os.path\nos.path.getmtime('x')\n", "file-times", 2),
    ("st_mtime", "from pathlib import Path\nPath('x').stat().st_mtime\n", "file-times", 2),
    ("logs dir", "open('/logs/verifier/reward.txt', 'w')\n", "grader-path", 1),
    ("tests dir", "open('/tests/broken_patch.diff')\n", "grader-path", 1),
    ("workspace", "import sys\nsys.path.insert(0, '/workspace/src')\n", "grader-path", 2),
    ("settrace", "import sys\nsys.settrace(None)\n", "tracing", 2),
    ("gettrace", "import sys\nassert sys.gettrace() is None\n", "tracing", 2),
    ("frames", "import sys\nsys._getframe(0).f_locals\n", "tracing", 2),
    ("ctypes", "import ctypes\n", "native", 1),
    ("gc scan", "import gc\ngc.get_objects()\n", "gc-scan", 2),
    ("sys.modules assignment", "import sys\nsys.modules['m'] = None\n", "import-system", 2),
    ("sys.modules via monkeypatch", "import sys\ndef test(monkeypatch):\n    monkeypatch.setitem(sys.modules, 'm', None)\n",
     "import-system", 3),
    ("sys.modules.pop", "import sys\nsys.modules.pop('m')\n", "import-system", 2),
    ("meta_path", "import sys\nsys.meta_path.insert(0, object())\n", "import-system", 2),
    ("builtins assignment", "import builtins\nbuiltins.len = lambda x: 0\n", "builtins", 2),
    ("builtins monkeypatch", "def test(monkeypatch):\n    monkeypatch.setattr('builtins.round', lambda *a: 0)\n",
     "builtins", 2),
    ("__builtins__", "__builtins__['len'] = None\n", "builtins", 1),
    ("eval", "eval('1')\n", "dynamic-code", 1),
    ("exec", "exec('x = 1')\n", "dynamic-code", 1),
    ("__import__", "__import__('os')\n", "dynamic-code", 1),
    ("import_module of a computed name", "import importlib\nimportlib.import_module('o' + 's')\n", "dynamic-code", 2),
    ("pytest_plugins", "pytest_plugins = ['evil']\n", "plugin", 1),
    ("pluginmanager", "def test(request):\n    request.config.pluginmanager.register(object())\n", "plugin", 2),
    ("urandom", "import os\nos.urandom(1)\n", "entropy", 2),
    ("uuid4", "import uuid\nuuid.uuid4()\n", "entropy", 2),
    ("unseeded random", "import random\nrandom.seed()\n", "entropy", 2),
    ("coverage", "import coverage\n", "coverage", 1),
    ("atexit", "import atexit\n", "process", 1),
    ("syntax error", "def test(:\n", "syntax", 1),
    # The routes around the lint that a red team found, each closed (the runtime refuses them regardless).
    ("getattr with a name in a variable", "import m\nN = 'x'\ngetattr(m.f, N)\n", "dynamic-code", 3),
    ("attrgetter with a computed name", "import operator\noperator.attrgetter(N)\n", "dynamic-code", 2),
    ("import_module of a forbidden module", "import importlib\nimportlib.import_module('dis')\n",
     "source-introspection", 2),
    ("import_module of subprocess", "import importlib\nimportlib.import_module('subprocess')\n", "process", 2),
    ("inspect.getmembers", "import inspect\ninspect.getmembers(len)\n", "source-introspection", 2),
    ("pytest internals", "from _pytest._code import Source\n", "pytest-internals", 1),
    ("traceback walkers", "import traceback\ntraceback.walk_tb(None)\n", "tracing", 2),
    ("extract_tb", "import traceback\ntraceback.extract_tb(None)\n", "tracing", 2),
    ("file size", "import os\nos.path.getsize('m.py')\n", "file-facts", 2),
    ("Path.stat()", "from pathlib import Path\nPath('m.py').stat()\n", "file-facts", 2),
    ("st_size", "import m\nm.s.st_size\n", "file-facts", 2),
    ("native thread id", "import threading\nthreading.get_native_id()\n", "native-ids", 2),
    ("/proc built from pieces", "p = '/proc/' + 'self'\n", "grader-path", 1),
    ("/proc in an f-string", "p = f\"/proc/{'self'}/stat\"\n", "grader-path", 1),
    ("refcounts", "import sys\nsys.getrefcount(1)\n", "refcount", 2),
    ("closure cells", "import m\nm.f.__closure__\n", "source-introspection", 2),
    ("generator frames", "import m\nm.g().gi_frame\n", "tracing", 2),
    ("builtins.exec", "import builtins\nbuiltins.exec('1')\n", "dynamic-code", 2),
    ("a child interpreter's module", "import _posixsubprocess\n", "process", 1),
    ("sub-interpreters", "import _xxsubinterpreters\n", "process", 1),
    # The second red team's routes: names reached by strings the lint did not read as names.
    ("attrgetter of a dotted frame path", "import operator\noperator.attrgetter('tb_frame.f_back.f_locals')\n",
     "tracing", 2),
    ("attrgetter of co_code", "import operator\noperator.attrgetter('co_code')\n", "source-introspection", 2),
    ("methodcaller of stat", "import operator\noperator.methodcaller('stat')\n", "file-facts", 2),
    ("getattr of a module's refused function", "import os\ngetattr(os, 'stat')\n", "file-times", 2),
    ("getattr of a builtin", "import builtins\ngetattr(builtins, 'exec')\n", "dynamic-code", 2),
    ("vars(builtins)", "import builtins\nvars(builtins)\n", "builtins", 2),
    ("a builtin by a folded key", "import builtins\nb = vars(builtins)\nb['ex' + 'ec']\n", "dynamic-code", 3),
    ("a module file by a folded key", "import m\nvars(m)['__fi' + 'le__']\n", "file-read", 2),
    # Round 3.
    ("threading.gettrace", "import threading\nthreading.gettrace()\n", "tracing", 2),
    ("builtins through sys.modules", "import sys\ndef test(monkeypatch):\n"
     "    monkeypatch.delattr(sys.modules['builtins'], '__name__')\n", "builtins", 3),
]


@pytest.mark.parametrize("name", list(ALLOWED))
def test_ordinary_tests_pass_untouched(name):
    assert lint_source(textwrap.dedent(ALLOWED[name])) == []


@pytest.mark.parametrize(("name", "source", "rule", "line"), REFUSED, ids=[r[0] for r in REFUSED])
def test_refused_constructs_are_reported_with_their_line(name, source, rule, line):
    findings = lint_source(source)
    assert (rule, line) in {(f.rule, f.line) for f in findings}, findings
    assert all(f.message.endswith(vlint.RULES[f.rule]) for f in findings)


def test_rule_tables_name_known_rules_only():
    tables = [vlint.FORBIDDEN_MODULES, vlint.FORBIDDEN_NAMES, vlint.FORBIDDEN_PREFIXES, vlint.FORBIDDEN_BUILTINS,
              vlint.FORBIDDEN_ATTRS, vlint.FORBIDDEN_METHODS]
    used = {rule for table in tables for rule in table.values()}
    assert used <= set(vlint.RULES)
    assert set(vlint.RULES) - used == {"syntax", "grader-path"}


def test_findings_are_deduplicated_and_sorted():
    findings = lint_source("import os\nos.stat('a'); os.stat('a')\nimport subprocess\n")
    assert [(f.line, f.rule) for f in findings] == [(2, "file-times"), (3, "process")]
    assert findings[0].to_dict() == {"line": 2, "col": 0, "rule": "file-times",
                                     "message": f"os.stat: {vlint.RULES['file-times']}"}

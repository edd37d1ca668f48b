"""The copies' bytecode: which modules are compiled, and that a run really loads them from the pycs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from repo2rlenv.verifiers.test_synthesis import verifier_bytecode as vbc

PKG = {
    "src/shop/__init__.py": "from shop.core import price\n",
    "src/shop/core.py": "def price():\n    return 10\n",
    "src/shop/sub/helpers.py": "X = 1\n",
    "src/shop/test_inline.py": "def test_x():\n    pass\n",
    "src/shop/conftest.py": "",
    "src/other/mod.py": "Y = 2\n",
    "tests/test_core.py": "from shop import price\n",
}


def _stage(root: Path, files: dict[str, str] = PKG) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_the_changed_modules_first_then_the_target_package_without_pytest_rewritten_files(tmp_path):
    stage = _stage(tmp_path)
    got = vbc.modules_to_compile(stage, "src/shop/core.py", ["src/other/mod.py", "tests/test_core.py"], ["src"])
    assert got == ["src/other/mod.py", "src/shop/core.py", "src/shop/__init__.py", "src/shop/sub/helpers.py"]


def test_a_top_level_module_compiles_alone_and_the_source_cap_holds(tmp_path, monkeypatch):
    stage = _stage(tmp_path, {"solo.py": "A = 1\n", "pkg/big.py": "B = 2\n" * 10, "pkg/small.py": "C = 3\n"})
    assert vbc.modules_to_compile(stage, "solo.py", [], [""]) == ["solo.py"]
    monkeypatch.setattr(vbc, "MAX_SOURCE_BYTES", 30)
    assert vbc.modules_to_compile(stage, "pkg/small.py", [], [""]) == ["pkg/small.py"]  # big.py would pass the cap


def _import_price(root: Path) -> str:
    code = "import sys; sys.path.insert(0, sys.argv[1]); import shop; print(shop.price(), shop.core.__cached__)"
    env = {"PATH": os.environ["PATH"], "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run([sys.executable, "-c", code, str(root / "src")], env=env, capture_output=True, text=True,
                          check=True)
    return done.stdout.strip()


def test_runs_load_the_pycs_and_a_changed_source_invalidates_them(tmp_path):
    stage = _stage(tmp_path)
    compiled = vbc.compile_stage(stage, stage, ["src/shop/__init__.py", "src/shop/core.py"])
    assert compiled == ["src/shop/__init__.py", "src/shop/core.py"]
    pyc = stage / vbc.pyc_relpath("src/shop/core.py")
    assert pyc.is_file() and _import_price(stage).startswith("10 ")
    # Forge: code returning 99 under the real source's hash. A run that prints 99 loaded the pyc.
    source = (stage / "src/shop/core.py").read_bytes()
    forged = vbc.pyc_bytes(b"def price():\n    return 99\n", stage / "src/shop/core.py")
    pyc.write_bytes(forged[:8] + vbc.importlib.util.source_hash(source) + forged[16:])
    assert _import_price(stage) == f"99 {pyc}"
    # A variant's source no longer matches the hash: Python compiles the source instead.
    (stage / "src/shop/core.py").write_text("def price():\n    return 11\n")
    assert _import_price(stage).startswith("11 ")


def test_each_variant_gets_the_pyc_of_its_own_source(tmp_path):
    run_root = tmp_path / "ws"
    compiled = ["src/shop/core.py"]
    got = vbc.with_bytecode({"src/shop/core.py": b"def price():\n    return 11\n", "README": b"x"}, compiled, run_root)
    assert set(got) == {"src/shop/core.py", "README", vbc.pyc_relpath("src/shop/core.py")}
    assert got[vbc.pyc_relpath("src/shop/core.py")] == vbc.pyc_bytes(b"def price():\n    return 11\n",
                                                                      run_root / "src/shop/core.py")
    deleted = vbc.with_bytecode({"src/shop/core.py": None}, compiled, run_root)
    assert deleted[vbc.pyc_relpath("src/shop/core.py")] is None
    broken = vbc.with_bytecode({"src/shop/core.py": b"def price(:\n"}, compiled, run_root)
    assert broken[vbc.pyc_relpath("src/shop/core.py")] is None  # the run reports the syntax error itself

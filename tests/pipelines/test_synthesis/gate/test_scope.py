"""Which test files decide a commit's gates (gate/scope.py): those that covered the changed file at the
ref, or that name the change; the whole suite when none does or most do."""

from __future__ import annotations

from pathlib import Path

from repo2rlenv.baseline.coverage_map import CoverageMap, FileCoverage
from repo2rlenv.pipelines.test_synthesis.gate.scope import commit_scope, suite_files
from repo2rlenv.pysource.functions import FunctionRecord


def _fn(path="pkg/text.py", module="pkg.text", qualname="slugify", class_name=None) -> FunctionRecord:
    return FunctionRecord(path=path, module=module, qualname=qualname, name=qualname.rsplit(".", 1)[-1],
                          class_name=class_name, lineno=1, end_lineno=5, body_lines=[2], signature="def f()",
                          docstring=None, is_async=False, decorators=[], loc=4)


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path


UNRELATED = {f"tests/test_other{i}.py": "from pkg.numbers import add\n\ndef test_x():\n    assert add(1, 1) == 2\n"
             for i in range(4)}


def test_the_files_naming_the_function_or_its_module_are_in_scope(tmp_path):
    tree = _tree(tmp_path, {**UNRELATED,
                            "tests/test_slug.py": "from pkg.text import slugify\n",
                            "tests/test_mod.py": "from pkg import text\n\ndef test_y():\n    text.other()\n",
                            "tests/helpers.py": "slugify = None\n",  # not a test file
                            "pkg/tests/test_inner.py": "import pkg.text as t\n"})
    scope = commit_scope(tree, [_fn()], roots=[])
    assert scope.files == ["pkg/tests/test_inner.py", "tests/test_mod.py", "tests/test_slug.py"]
    assert scope.note == "3 of 7 test files (covering the change)" and not scope.whole


def test_a_file_that_covered_the_changed_file_at_the_ref_is_in_scope_without_naming_it(tmp_path):
    # A private helper reached through the public API: no test names it, the ref's coverage knows.
    tree = _tree(tmp_path, {**UNRELATED, "tests/test_api.py": "from pkg import render\n"})
    coverage = CoverageMap(tests=["tests/test_api.py::test_render", "tests/gone.py::test_old"],
                           files={"pkg/text.py": FileCoverage(executable=[1, 2], executed=[1, 2],
                                                              contexts={1: [0], 2: [1]})})
    scope = commit_scope(tree, [_fn(qualname="_helper")], roots=["tests"], ref_coverage=coverage)
    # The test file that no longer exists at the commit is left out.
    assert scope.files == ["tests/test_api.py"]


def test_the_whole_suite_runs_when_no_file_or_most_files_name_the_change(tmp_path):
    tree = _tree(tmp_path, dict(UNRELATED))
    none = commit_scope(tree, [_fn()], roots=[])
    assert none.whole and "no test file of 4 names the change" in none.note
    most = commit_scope(tree, [_fn(path="pkg/numbers.py", module="pkg.numbers", qualname="add")], roots=[])
    assert most.whole and "4 of 4" in most.note
    off = commit_scope(_tree(tmp_path, {"tests/test_slug.py": "from pkg.text import slugify\n"}), [_fn()],
                       roots=[], enabled=False)
    assert off.whole and off.note == "whole suite (gate_scope=suite)"


def test_a_method_is_named_by_its_class_and_dunder_names_do_not_match_everything(tmp_path):
    tree = _tree(tmp_path, {**UNRELATED, "tests/test_cart.py": "from shop.models import Cart\n",
                            "tests/test_init.py": "def test_z():\n    object.__init__(None)\n"})
    fn = _fn(path="shop/models.py", module="shop.models", qualname="Cart.__init__", class_name="Cart")
    scope = commit_scope(tree, [fn], roots=[])
    assert scope.files == ["tests/test_cart.py"]


def test_suite_files_follow_python_files_and_skip_tool_directories(tmp_path):
    tree = _tree(tmp_path, {"tests/check_a.py": "", "tests/test_b.py": "", ".tox/py/test_c.py": "",
                            "venv/lib/test_d.py": "", "tests/sub/b_test.py": ""})
    assert suite_files(tree, []) == ["tests/sub/b_test.py", "tests/test_b.py"]
    assert suite_files(tree, ["tests"], ["check_*.py"]) == ["tests/check_a.py"]

"""The target from a task's instruction, import roots, and function lines."""

from __future__ import annotations

import pytest

from repo2rlenv.solver.errors import SolverInputError
from repo2rlenv.solver.target import Target, import_root, is_test_file, locate_function, target_from_instruction


def test_target_from_the_rendered_instruction_template(solver_kit):
    target = target_from_instruction(solver_kit.instruction("tests/test_r2e_1a2b3c4d.py"))
    assert target == Target(path="tinyshop/prices.py", qualname="discounted", module="tinyshop.prices",
                            test_path="tests/test_r2e_1a2b3c4d.py", import_roots=[""])


def test_an_instruction_without_a_target_is_refused():
    with pytest.raises(SolverInputError, match="does not name a function"):
        target_from_instruction("Write some tests, please.")


@pytest.mark.parametrize(("path", "module", "root"), [
    ("src/minicart/pricing.py", "minicart.pricing", "src"), ("pkg/mod.py", "pkg.mod", ""),
    ("lib/python/pkg/__init__.py", "pkg", "lib/python"), ("weird.py", "other", ""),
])
def test_import_root(path, module, root):
    assert import_root(path, module) == root


def test_locate_function_gives_coverage_lines_of_a_method():
    source = "class Cart:\n    def total(self):\n        '''Doc.'''\n        x = 1\n        return x\n"
    target = Target(path="p.py", qualname="Cart.total", module="p", test_path="tests/test_p.py", import_roots=[""])
    assert locate_function(source, target).body_lines == [4, 5]
    with pytest.raises(SolverInputError, match="is not a function"):
        locate_function(source, target.model_copy(update={"qualname": "Cart.missing"}))


@pytest.mark.parametrize(("path", "ok"), [("tests/test_a.py", True), ("tests/unit/test_b.py", True),
                                          ("tests/conftest.py", False), ("test_a.py", False), ("src/test_a.py", False)])
def test_is_test_file(path, ok):
    assert is_test_file(path) is ok

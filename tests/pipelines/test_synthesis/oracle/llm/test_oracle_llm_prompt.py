"""What the LLM oracle shows the model: source sections, the first request, the feedback; and its static checks."""

from __future__ import annotations

import textwrap

import pytest

from repo2rlenv.pipelines.test_synthesis.oracle.llm import Judgement, OracleContext, Verdict
from repo2rlenv.pipelines.test_synthesis.oracle.llm.check import static_check
from repo2rlenv.pipelines.test_synthesis.oracle.llm.prompt import MAX_FEEDBACK_CHARS, feedback_message, initial_messages
from repo2rlenv.pysource.sections import module_imports, nearby_code, imports_reaching

MODULE = textwrap.dedent('''
    """Shop rules."""
    import math
    from dataclasses import dataclass

    LIMIT = 10
    TABLE = {"a": 1}


    def helper(x):
        """Help."""
        return x + 1


    def target(x):
        return helper(x) * LIMIT


    class Cart:
        """A cart."""

        def __init__(self, owner):
            self.owner = owner

        def total(self):
            return 0
''')


def context(**overrides) -> OracleContext:
    values = dict(target_file="shop/rules.py", module="shop.rules", qualname="target",
                  function_source="def target(x):\n    return helper(x) * LIMIT\n", module_source=MODULE,
                  diff="-    return helper(x) * LIMIT\n+    return helper(x) + LIMIT\n",
                  test_path="tests/test_r2e_1.py")
    values.update(overrides)
    return OracleContext(**values)


def test_module_imports_and_outline_of_a_module_function():
    assert module_imports(MODULE) == "import math\nfrom dataclasses import dataclass\n"
    outline = nearby_code(MODULE, "target")
    assert 'LIMIT = 10\nTABLE = {"a": 1}' in outline
    assert 'def helper(x):\n    """Help."""\n    ...' in outline
    assert 'class Cart:\n    """A cart."""\n    ...' in outline
    assert "def target" not in outline and "return x + 1" not in outline


def test_nearby_code_of_a_method_is_its_class(monkeypatch):
    assert nearby_code(MODULE, "Cart.total").startswith('class Cart:\n    """A cart."""\n\n    def __init__')
    # A long class is cut down to its header and constructor.
    monkeypatch.setattr("repo2rlenv.pysource.sections.MAX_CLASS_LINES", 3)
    short = nearby_code(MODULE, "Cart.total")
    assert "self.owner = owner" in short and "def total" not in short


def test_unparsable_sources_give_empty_sections():
    assert module_imports("def (") == "" and nearby_code("def (", "x") == "" and imports_reaching("def (", "m") == []
    assert nearby_code(MODULE, "Nope.method") == ""


def test_test_imports_keep_only_the_package():
    test = "import os\nimport shop\nfrom shop.rules import target, helper\nfrom other import shop\n"
    assert imports_reaching(test, "shop.rules") == ["import shop", "from shop.rules import target, helper"]


def test_first_request_holds_function_diff_rules_and_fallback_import():
    system, user = initial_messages(context(max_test_loc=77, min_new_tests=2))
    assert system["role"] == "system" and "version A" in system["content"]
    text = user["content"]
    for expected in ("`target` in `shop/rules.py`", "return helper(x) + LIMIT", "tests/test_r2e_1.py",
                     "`from shop.rules import target`", "At most 77 non-blank lines", "at least 2 test case(s)",
                     "no existing test covers this function", "```python\nimport math"):
        assert expected in text, expected
    assert "$" not in text  # every placeholder was filled


def test_feedback_lists_failures_with_tails_passes_on_b_and_keepers():
    judgement = Judgement(
        verdict=Verdict.FAILS_ON_A,
        on_a={"test_bad": "failed", "test_weak": "passed", "test_good": "passed"},
        on_b={"test_bad": "passed", "test_weak": "passed", "test_good": "failed"},
        failing_on_a=["test_bad"], passing_on_b=["test_bad", "test_weak"],
        tails_a={"test_bad": "x" * 5000 + "\nE   assert 5 == 15"},
    )
    text = feedback_message(judgement)
    assert text.startswith("Your test file was not accepted: some tests do not pass on version A.")
    assert "- test_bad: failed\n```\n..." in text and "E   assert 5 == 15" in text
    assert "x" * 801 not in text  # the tail is cut
    assert "so they do not detect the change" in text and "- test_weak" in text
    assert "keep them:\n- test_good" in text


def test_feedback_is_bounded():
    names = [f"test_{i}_{'n' * 300}" for i in range(40)]
    judgement = Judgement(verdict=Verdict.FAILS_ON_A, on_a=dict.fromkeys(names, "failed"), failing_on_a=names,
                          tails_a=dict.fromkeys(names, "E" * 2000))
    assert len(feedback_message(judgement)) < MAX_FEEDBACK_CHARS + 400


def test_collection_error_feedback():
    judgement = Judgement(verdict=Verdict.FAILS_ON_A, collection_errors=["ImportError: No module named 'shopx'"])
    assert "could not collect the file on version A" in feedback_message(judgement)
    assert "No module named 'shopx'" in feedback_message(judgement)


@pytest.mark.parametrize(("source", "verdict", "detail"), [
    ("def test_x(:\n    pass\n", Verdict.SYNTAX, "SyntaxError at line 1"),
    ("def test_x():\n" + "    x = 1\n" * 12, Verdict.TOO_LONG, "13 non-blank lines; the limit is 10"),
    ("import subprocess\n\ndef test_x():\n    subprocess.run(['git', 'log'])\n", Verdict.LINT, "line 1:"),
])
def test_static_check_rejections(source, verdict, detail):
    judgement = static_check(source, "tests/test_r2e_1.py", max_test_loc=10)
    assert judgement is not None and judgement.verdict is verdict and detail in judgement.detail


def test_static_check_passes_an_ordinary_test():
    assert static_check("import pytest\n\n\ndef test_x():\n    assert 1 + 1 == 2\n", "tests/t.py", 10) is None


def test_context_for_candidate_reads_a_snapshot(tmp_path):
    from repo2rlenv.pipelines.test_synthesis.candidates import Candidate
    from repo2rlenv.pysource.functions import FunctionRecord
    from repo2rlenv.pipelines.test_synthesis.oracle.llm import context_for_candidate
    from repo2rlenv.pipelines.test_synthesis.options import TestSynthesisOptions

    (tmp_path / "shop").mkdir()
    (tmp_path / "shop/rules.py").write_text(MODULE)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests/test_rules.py").write_text("from shop.rules import target\n")
    lineno = MODULE.splitlines().index("def target(x):") + 1
    func = FunctionRecord(path="shop/rules.py", module="shop.rules", qualname="target", name="target", class_name=None,
                          lineno=lineno, end_lineno=lineno + 1, body_lines=[lineno + 1], signature="def target(x)",
                          docstring=None, is_async=False, decorators=[], loc=1)
    cand = Candidate(candidate_id="c1", strategy="mutation", function=func, files_b={}, diff="--- a\n+++ b\n",
                     covering_tests=["tests/test_gone.py::t1", "tests/test_gone.py::t2", "tests/test_rules.py::t"])
    options = TestSynthesisOptions(max_test_loc=90, min_new_tests=2, max_oracle_tests=4)

    ctx = context_for_candidate(cand, tmp_path, "tests/test_r2e_x.py", options)

    assert ctx.function_source == "def target(x):\n    return helper(x) * LIMIT\n"
    assert ctx.module_source == MODULE and ctx.diff == cand.diff
    assert (ctx.example_test_path, ctx.example_test) == ("tests/test_rules.py", "from shop.rules import target\n")
    assert (ctx.max_test_loc, ctx.min_new_tests, ctx.max_tests) == (90, 2, 4)

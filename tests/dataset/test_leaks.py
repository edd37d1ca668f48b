"""The leak audit: what the agent reads must not locate or describe B."""

from __future__ import annotations

from repo2rlenv.dataset import leaks

DIFF = """--- a/pkg/mod.py
+++ b/pkg/mod.py
@@ -10,3 +10,3 @@
-    if percent > 100:
+    if percent >= 100:
         raise ValueError("percent out of range")
"""
CLEAN = "# Write tests that pin down `apply_discount`\n\nTest the function thoroughly.\n"


def test_a_clean_instruction_passes():
    assert leaks.audit(CLEAN, diff=DIFF, lines=[11, 14], operator="comparison_flip") == []


def test_each_kind_of_leak_is_named():
    assert leaks.audit(CLEAN + "Cover the lines the existing tests leave unexecuted.", diff=DIFF, lines=[]) == [
        "the word 'unexecuted'"]
    assert leaks.audit(CLEAN + "Look at line 11.", diff=DIFF, lines=[11]) == ["line 11"]
    assert leaks.audit(CLEAN + "see mod.py:14", diff=DIFF, lines=[14]) == ["line 14"]
    assert leaks.audit(CLEAN + "lines 3, 14 matter", diff=DIFF, lines=[14]) == ["line 14"]
    assert leaks.audit(CLEAN + "Hint: if percent >= 100:", diff=DIFF, lines=[]) == ["B's text 'if percent >= 100:'"]
    assert leaks.audit(CLEAN + "made by comparison_flip", diff=DIFF, lines=[], operator="comparison_flip") == [
        "the operator 'comparison_flip'"]


def test_numbers_that_are_not_line_references_pass():
    text = CLEAN + "At most 200 non-blank lines in the file; at least 1 test function(s).\n"
    assert leaks.audit(text, diff=DIFF, lines=[1, 200]) == []


def test_the_shipped_template_passes_with_a_targets_hint_gone():
    from importlib import resources

    template = (resources.files("repo2rlenv.harbor_templates") / "instruction.md").read_text()
    assert leaks.audit(template, diff=DIFF, lines=[11]) == []

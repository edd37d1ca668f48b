"""Reading model replies: whole files, search/replace edits, verdicts, and what is not an edit (table-driven)."""

from __future__ import annotations

import pytest

from repo2rlenv.solver.replies import SearchReplace, WholeFile, parse_reply

FENCE = "```"

CASES = [
    ("plain FILE block",
     f"FILE: tests/test_a.py\n{FENCE}python\ndef test_x():\n    assert 1\n{FENCE}\n",
     [WholeFile(path="tests/test_a.py", content="def test_x():\n    assert 1\n")], None),
    ("markdown-decorated headers",
     f"### FILE: `tests/test_a.py`\n{FENCE}python\nX = 1\n{FENCE}\n**EDIT:** tests/test_a.py\n{FENCE}\n"
     "<<<<<<< SEARCH\nX = 1\n=======\nX = 2\n>>>>>>> REPLACE\n" + FENCE + "\n",
     [WholeFile(path="tests/test_a.py", content="X = 1\n"),
      SearchReplace(path="tests/test_a.py", search="X = 1\n", replace="X = 2\n")], None),
    ("two sections in one EDIT, then an unfenced one",
     f"EDIT: t.py\n{FENCE}\n<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n<<<<<<< SEARCH\nc\n=======\n"
     f">>>>>>> REPLACE\n{FENCE}\nEDIT: u.py\n<<<<<<< SEARCH\nd\n=======\ne\n>>>>>>> REPLACE\n",
     [SearchReplace(path="t.py", search="a\n", replace="b\n"), SearchReplace(path="t.py", search="c\n", replace=""),
      SearchReplace(path="u.py", search="d\n", replace="e\n")], None),
    ("verdict outside fences, with its reason",
     "The code is wrong.\nVERDICT: CODE_BUG total() drops the last item\n", [], "total() drops the last item"),
    ("bold verdict without a reason", "**VERDICT:** CODE_BUG\n", [], ""),
    ("a verdict inside a code block is test text, not a verdict",
     f"FILE: tests/test_a.py\n{FENCE}python\nMSG = '''\nVERDICT: CODE_BUG\n'''\n{FENCE}\n",
     [WholeFile(path="tests/test_a.py", content="MSG = '''\nVERDICT: CODE_BUG\n'''\n")], None),
    ("a verdict mentioned inside a sentence does not count", "I will not say VERDICT: CODE_BUG here.\n", [], None),
    ("one unlabelled python block with tests is the default file",
     f"Sure:\n{FENCE}python\ndef test_y():\n    pass\n{FENCE}\n",
     [WholeFile(path="tests/test_default.py", content="def test_y():\n    pass\n")], None),
    ("two unlabelled blocks are ambiguous: nothing",
     f"{FENCE}python\ndef test_y():\n    pass\n{FENCE}\n{FENCE}python\ndef test_z():\n    pass\n{FENCE}\n", [], None),
    ("an unlabelled block without tests is not a test file", f"{FENCE}python\nx = 1\n{FENCE}\n", [], None),
    ("a longer fence holds a shorter one",
     "FILE: tests/test_a.py\n````python\nDOC = '''\n```\nnot the end\n```\n'''\n````\n",
     [WholeFile(path="tests/test_a.py", content="DOC = '''\n```\nnot the end\n```\n'''\n")], None),
]


@pytest.mark.parametrize(("reply", "edits", "verdict"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_parse_reply(reply, edits, verdict):
    parsed = parse_reply(reply, default_path="tests/test_default.py")
    assert parsed.edits == edits
    assert parsed.verdict == verdict
    assert parsed.problems == []


@pytest.mark.parametrize(("reply", "problem"), [
    (f"EDIT: t.py\n{FENCE}\n<<<<<<< SEARCH\na\n=======\nb\n{FENCE}\n", "not closed with '>>>>>>> REPLACE'"),
    (f"EDIT: t.py\n{FENCE}\njust text\n{FENCE}\n", "text outside a SEARCH/REPLACE section"),
    ("FILE: tests/test_a.py\n", "no code block follows the header"),
])
def test_unreadable_blocks_are_reported_as_problems(reply, problem):
    parsed = parse_reply(reply)
    assert parsed.edits == []
    assert len(parsed.problems) == 1 and problem in parsed.problems[0]

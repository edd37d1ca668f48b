"""How a completion becomes the test file (scoring/completion.py): the documented rule, case by case."""

from __future__ import annotations

import pytest

from repo2rlenv.scoring.completion import completion_text, extract_test_file

TEST = "def test_a():\n    assert 1 + 1 == 2\n"


@pytest.mark.parametrize("text, expected", [
    (f"```python\n{TEST}```", TEST),
    (f"```py\n{TEST}```\n", TEST),
    (f"~~~python\n{TEST}~~~", TEST),
    (f"````\n{TEST}````", TEST),
    (TEST, TEST),  # no fence: the whole text, since it parses and defines a test
    (f"draft:\n```python\ndef test_old():\n    pass\n```\nfinal:\n```python\n{TEST}```", TEST),  # the last
    (f"```python\n{TEST}```\nRun it:\n```python\nimport pytest\npytest.main()\n```", TEST),  # the last *test*
    (f"```python\n{TEST}```\nOutput:\n```\n1 passed in 0.01s\n```", TEST),  # output does not parse
    (f"```bash\npytest -q\n```\n```python\n{TEST}```", TEST),
    (f"<think>\n```python\ndef test_thought():\n    pass\n```\n</think>\n```python\n{TEST}```", TEST),
    ("class TestCart:\n    def check(self):\n        pass\n", "class TestCart:\n    def check(self):\n        pass\n"),
])
def test_the_file_is_found(text, expected):
    assert extract_test_file(text) == expected


@pytest.mark.parametrize("text", [
    "", None, "I would test the edge cases.", "```python\ndef broken(:\n```", "```bash\npytest\n```",
    "<think>```python\n" + TEST + "```</think>no answer", "<think>" + TEST,  # unclosed reasoning
    "x = 1\n",  # parses, defines no test, no fence
])
def test_no_file(text):
    assert extract_test_file(text) is None


def test_a_fenced_block_without_tests_is_still_the_file():
    assert extract_test_file("```python\nimport os\n```") == "import os\n"


@pytest.mark.parametrize("completion, text", [
    ("plain", "plain"),
    ({"role": "assistant", "content": "one"}, "one"),
    ([{"role": "user", "content": "q"}, {"role": "assistant", "content": "a1"},
      {"role": "assistant", "content": "a2"}], "a2"),
    ([{"role": "assistant", "content": [{"type": "text", "text": "x"}, {"type": "image"}, {"type": "text", "text": "y"}]}],
     "xy"),
    ([], ""), (None, ""),
])
def test_completion_text(completion, text):
    assert completion_text(completion) == text

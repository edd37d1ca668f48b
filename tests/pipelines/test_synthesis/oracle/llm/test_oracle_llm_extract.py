"""Taking the test file out of a model's reply: which fenced block wins, and clear failures."""

from __future__ import annotations

import pytest

from repo2rlenv.pipelines.test_synthesis.oracle.llm import NoCodeBlock, extract_code

SHORT = "def test_a():\n    assert 1\n"
LONG = "import pytest\n\n\ndef test_b():\n    assert 2 == 2\n"


@pytest.mark.parametrize(("reply", "expected"), [
    (f"```python\n{SHORT}```", SHORT),
    (f"Sketch:\n```python\n{SHORT}```\nFull file:\n```python\n{LONG}```\nDone.", LONG),
    (f"```python\n{LONG}```\nthen\n```py\n{SHORT}```", LONG),  # largest, not last
    (f"```python\n{SHORT}```\n```python\n{SHORT.replace('a', 'c')}```", SHORT.replace("a", "c")),  # tie: last
    (f"```\n{LONG}```\n```python\n{SHORT}```", SHORT),  # a tagged block beats a longer untagged one
    (f"```\n{SHORT}```", SHORT),
    (f"```bash\npip install x\n```\n```python\n{SHORT}```", SHORT),
    (f"````python\ns = '```'\n{SHORT}````", f"s = '```'\n{SHORT}"),  # a longer fence holds a shorter one
    (f"```Python  title=test.py\n{SHORT}```  ", SHORT),
    (SHORT, SHORT),  # bare code that parses and defines a test
    (f"```python\n{SHORT}\n\n\n```", SHORT),  # trailing blank lines trimmed to one newline
])
def test_extract(reply, expected):
    assert extract_code(reply) == expected


@pytest.mark.parametrize(("reply", "message"), [
    ("I cannot write tests for this.", "no ```python code block"),
    (f"```python\n{SHORT}", "not closed"),  # cut off by a token limit
    ("```bash\nls\n```", "no ```python code block"),
    ("```python\n\n```", "code block is empty"),
    ("def helper():\n    return 1\n", "no ```python code block"),  # code, but no test
])
def test_no_code_block(reply, message):
    with pytest.raises(NoCodeBlock, match=message):
        extract_code(reply)

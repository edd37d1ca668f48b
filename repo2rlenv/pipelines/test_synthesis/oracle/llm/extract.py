"""Take the test file out of a model's reply: the largest fenced Python block (the last one on a tie).

Models wrap code in Markdown fences, sometimes several (a sketch, then the file), sometimes untagged.
Blocks tagged python/py win over untagged ones; blocks tagged with another language are never taken.
A reply that is nothing but code (no fence) is taken whole when it parses and defines a test.
"""

from __future__ import annotations

import ast
import re

# A fence opens a line with three or more backticks and an optional info string, and closes with at
# least as many backticks alone on a line.
_FENCE = re.compile(r"^(?P<fence>`{3,})[ \t]*(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=fence)`*[ \t]*$", re.M | re.S)
_OPEN = re.compile(r"^`{3,}[ \t]*(python3?|py|pytest)?[ \t]*$", re.M | re.I)
PYTHON_TAGS = frozenset({"python", "python3", "py", "pytest"})


class NoCodeBlock(ValueError):
    """The reply holds no usable code block; the message says what was wrong, for the model to read."""


def _looks_like_tests(text: str) -> bool:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    return any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name.startswith("test")
               for n in ast.walk(tree))


def extract_code(reply: str) -> str:
    """The test file in ``reply``, ending with one newline; raises `NoCodeBlock` when there is none."""
    tagged, untagged = [], []
    for m in _FENCE.finditer(reply):
        info = m.group("info").strip().split()
        lang = info[0].lower() if info else ""
        if lang in PYTHON_TAGS:
            tagged.append(m.group("body"))
        elif not lang:
            untagged.append(m.group("body"))
    blocks = [b for b in tagged if b.strip()] or [b for b in untagged if b.strip()]
    if blocks:
        best = max(reversed(blocks), key=len)  # reversed: on equal length the last block wins
        return best.rstrip() + "\n"
    if tagged or untagged:
        raise NoCodeBlock("the reply's ```python code block is empty")
    if _OPEN.search(_FENCE.sub("", reply)):
        raise NoCodeBlock("the reply's code block is not closed with ``` (was the reply cut off?)")
    if _looks_like_tests(reply):
        return reply.strip() + "\n"
    raise NoCodeBlock("the reply has no ```python code block")

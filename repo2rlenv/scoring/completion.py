"""How a model's completion becomes the test file that is scored — the one rule every adapter uses.

`extract_test_file(text)`:
1. Reasoning is dropped first: everything inside `<think>…</think>` (and an unclosed `<think>` to the end).
2. Fenced blocks (three or more backticks or tildes, closed by the same fence) whose info string is empty
   or names Python (`python`, `py`, `python3`, `pytest`) are the candidates, in order.
3. The file is the **last** candidate that parses as Python and defines a test (a function whose name
   starts with `test`, or a class whose name starts with `Test`); failing that, the last one that parses.
   Models tend to draft and then give the final file; the "defines a test" filter skips an example of
   output or a usage snippet written after it.
4. With no fenced block at all, the whole text is the file if it parses and defines a test.
5. Otherwise there is no file (None), scored as an empty submission: 0.

`completion_text(completion)` reads what trainers pass: a string, or a conversation (a list of
`{"role", "content"}` messages, content a string or a list of `{"type": "text", "text"}` parts), whose last
assistant message is the completion.
"""

from __future__ import annotations

import ast
import re
from typing import Any

_THINK = re.compile(r"<think>.*?(</think>|\Z)", re.DOTALL)
_FENCE = re.compile(r"^[ \t]{0,3}(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\n`]*)\n(?P<body>.*?)\n?^[ \t]{0,3}(?P=fence)[`~]*[ \t]*$",
                    re.DOTALL | re.MULTILINE)
_PYTHON_INFO = {"", "python", "py", "python3", "pytest"}


def _parses(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def _defines_test(tree: ast.Module) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            return True
        if isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            return True
    return False


def extract_test_file(text: str | None) -> str | None:
    """The test file a completion contains, by the rule in this module's docstring; None if it has none."""
    if not text:
        return None
    text = _THINK.sub("", text)
    blocks = [m.group("body") for m in _FENCE.finditer(text)
              if (m.group("info").strip().split() or [""])[0].lower() in _PYTHON_INFO]
    if not _FENCE.search(text):
        tree = _parses(text)
        return _with_newline(text) if tree is not None and _defines_test(tree) else None
    parsed = [(body, tree) for body in blocks if (tree := _parses(body)) is not None]
    for body, tree in reversed(parsed):
        if _defines_test(tree):
            return _with_newline(body)
    return _with_newline(parsed[-1][0]) if parsed else None


def _with_newline(source: str) -> str:
    return source if source.endswith("\n") else source + "\n"


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content
                       if isinstance(part, dict) and part.get("type", "text") == "text")
    return "" if content is None else str(content)


def completion_text(completion: Any) -> str:
    """The text of a trainer's completion: a string, one message, or a conversation (last assistant turn)."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, dict):
        return _content_text(completion.get("content"))
    if isinstance(completion, (list, tuple)):
        turns = [m for m in completion if isinstance(m, dict)]
        assistant = [m for m in turns if m.get("role", "assistant") == "assistant"]
        return _content_text((assistant or turns or [{}])[-1].get("content"))
    return "" if completion is None else str(completion)

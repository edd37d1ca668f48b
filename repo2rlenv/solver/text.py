"""Small text helpers for prompts: numbered excerpts and bounded lengths."""

from __future__ import annotations


def numbered(text: str, first: int = 1, last: int | None = None) -> str:
    """Lines `first`..`last` (1-based, clipped to the text) prefixed with their numbers."""
    lines = text.splitlines()
    first = max(1, first)
    last = len(lines) if last is None else min(len(lines), last)
    width = len(str(max(last, 1)))
    return "\n".join(f"{n:>{width}} | {lines[n - 1]}" for n in range(first, last + 1))


def clip(text: str, limit: int) -> str:
    """`text` cut to about `limit` characters, keeping its start and its end (where tracebacks say most)."""
    if len(text) <= limit:
        return text
    head = limit // 3
    tail = limit - head
    return f"{text[:head]}\n... ({len(text) - limit} characters cut) ...\n{text[-tail:]}"

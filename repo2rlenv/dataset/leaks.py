"""The leak audit: what the agent reads before it starts must not locate or describe B (issue 16, item 3).

The agent sees the instruction and the task's Dockerfile (and A's tree, which is what B is hidden
from). A hint that names the lines the suite leaves unexecuted locates B when B's line is the only
one; a word like "mutant" or "off by one" describes it. The audit is run on every task as it is
written (`emit.write_task`), so a template edit that reintroduces a hint fails the task, not a review.
"""

from __future__ import annotations

import re

# Words that describe how B was made or where it is; none belongs in what the agent reads.
TELLING_WORDS = ("mutant", "mutation", "mutated", "broken", "oracle", "unexecuted", "uncovered",
                 "not covered", "never run", "missed lines", "sibling")
# Lines of B's text shorter than this are too common (`return x`, `pass`) to mean a leak when seen.
MIN_CHANGED_TEXT = 12


class InstructionLeak(ValueError):
    """What the agent reads tells it about B; the message lists what."""


def changed_text(diff: str) -> list[str]:
    """B's own lines in the diff: added lines, stripped, long enough to be telling."""
    added = [line[1:].strip() for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]
    removed = {line[1:].strip() for line in diff.splitlines() if line.startswith("-") and not line.startswith("---")}
    return [text for text in added if len(text) >= MIN_CHANGED_TEXT and text not in removed]


def audit(seen: str, *, diff: str, lines: list[int], operator: str | None = None) -> list[str]:
    """What in `seen` tells the agent about B: telling words, B's line numbers (`lines`: the changed
    line and the coverage targets), B's own text, the mutation operator's name."""
    lowered = seen.lower()
    found = [f"the word {word!r}" for word in TELLING_WORDS if word in lowered]
    for number in sorted(set(lines)):
        if re.search(rf"\b(?:line|lines|l\.|:){number}\b|\blines? [\d, ]*\b{number}\b", lowered):
            found.append(f"line {number}")
    found += [f"B's text {text!r}" for text in changed_text(diff) if text in seen]
    if operator and re.search(rf"\b{re.escape(operator.lower())}\b", lowered):
        found.append(f"the operator {operator!r}")
    return found

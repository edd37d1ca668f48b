"""The optional dependencies the dataset's environments dropped, for the card (issue 34, item 2).

A run records in its summary.json (`dropped dependencies`) each declared test/dev dependency the tests do
not import that failed to install, with pip's reason; a corpus keeps one such summary per repo under its
run folders. The tasks' environments lack these packages, so the card says which and why.
"""

from __future__ import annotations

import json
from pathlib import Path

from repo2rlenv.corpus.publish import RUNS_DIR

KEY = "dropped dependencies"


def dropped_dependencies(root: Path) -> dict[str, list[str]]:
    """Run (`.` for a single generate, else the corpus's run folder name) → "spec (source): reason"."""
    out: dict[str, list[str]] = {}
    for summary in [root / "summary.json", *sorted((root / RUNS_DIR).glob("*/summary.json"))]:
        try:
            data = json.loads(summary.read_text())
        except (OSError, ValueError):
            continue
        rows = data.get(KEY) if isinstance(data, dict) else None
        if rows:
            name = "." if summary.parent == root else summary.parent.name
            out[name] = [f"{r['spec']} ({r['source']}): {r['reason']}" for r in rows if isinstance(r, dict)]
    return out

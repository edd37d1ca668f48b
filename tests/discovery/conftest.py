"""`write_tree(files)`: a synthetic repo snapshot (a plain directory, as `git archive` leaves it)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest


@pytest.fixture
def write_tree(tmp_path: Path) -> Callable[[dict[str, str]], Path]:
    counter = {"n": 0}

    def write(files: dict[str, str]) -> Path:
        counter["n"] += 1
        root = tmp_path / f"tree{counter['n']}"
        root.mkdir()
        for rel, text in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
        return root

    return write

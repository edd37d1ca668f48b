"""docs/options.md is what scripts/gen_options_doc.py renders from the options model: an option added or
changed without regenerating it fails here."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_options_doc_is_current(load_script):
    script = load_script("gen_options_doc")
    assert (ROOT / "docs" / "options.md").read_text(encoding="utf-8") == script.render()

"""Pieces of the self-contained HTML pages the package writes (eval's report, diff mode's report)."""

from __future__ import annotations

import base64

MEDIA_TYPES = {".json": "application/json", ".jsonl": "application/x-ndjson", ".md": "text/markdown",
               ".py": "text/x-python", ".diff": "text/x-diff"}


def data_url(data: bytes, suffix: str) -> str:
    """A `data:` URL holding `data` exactly, so a page's downloads need nothing beside the page."""
    media = MEDIA_TYPES.get(suffix, "application/octet-stream")
    return f"data:{media};base64,{base64.b64encode(data).decode('ascii')}"

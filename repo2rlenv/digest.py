"""Content hashes of directory trees (image tags, cache keys, journal keys)."""

from __future__ import annotations

import hashlib
from pathlib import Path


def tree_digest(root: Path) -> str:
    """sha256 over every file's relative path and bytes, in a stable order."""
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()

"""Atomic file and directory writes: readers never see half of anything, killed runs leave no debris."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterable


def write_text(path: Path, text: str) -> None:
    """Write `text` to `path` via a temp file in the same dir and a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        # mkstemp makes the file 0600; a dataset file should be as readable as any other.
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_lines(path: Path, lines: Iterable[str]) -> None:
    write_text(path, "".join(line.rstrip("\n") + "\n" for line in lines))


def publish_dir(staging: Path, final: Path) -> None:
    """Move a completely written `staging` dir to `final`, replacing an older `final` if present."""
    final.parent.mkdir(parents=True, exist_ok=True)
    if final.exists():
        old = final.with_name(f".{final.name}.old")
        shutil.rmtree(old, ignore_errors=True)
        os.replace(final, old)
        os.replace(staging, final)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(staging, final)


def staging_dir(parent: Path, name: str) -> Path:
    """A fresh hidden temp dir next to where `name` will be published (same filesystem → atomic rename)."""
    parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f".{name}.partial-", dir=parent))


def sweep_staging(root: Path) -> int:
    """Remove the staging dirs (`staging_dir`'s `.NAME.partial-*`) a killed run left anywhere under `root`;
    how many."""
    removed = 0
    for staging in list(root.glob("**/.*.partial-*")):
        if staging.is_dir():
            shutil.rmtree(staging, ignore_errors=True)
            removed += 1
    return removed


def remove_dir(path: Path) -> None:
    """Remove a published dir at once: renamed to a staging name first (which `sweep_staging` clears if
    the delete is killed), so readers see it whole or not at all."""
    trash = staging_dir(path.parent, path.name)
    os.replace(path, trash / path.name)
    shutil.rmtree(trash, ignore_errors=True)

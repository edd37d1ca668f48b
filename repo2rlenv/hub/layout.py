"""The layout of a published dataset: the folder `export` writes, `push` uploads and `pull` rebuilds.

```
README.md                           dataset card (YAML front matter: license, tags, `configs` → the table)
registry.json                       Harbor registry: one dataset spec whose tasks point at tasks/<task_id>
data/train-00000-of-00001.parquet   one row per task (see table.py), read by `datasets` with no custom code
manifest.jsonl                      the dataset's manifest, as `repo2rlenv validate` and `push` read it
validation/<task_id>.json           the latest validation record of each task
tasks/<task_id>/…                   the Harbor task trees, byte for byte as generated
```

A push only ever deletes paths this layout owns (`is_managed`), so files someone added to the Hub repo
by hand (and the Hub's own `.gitattributes`) survive.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from repo2rlenv.dataset.taskdir import DatasetPaths

TABLE_PATH = "data/train-00000-of-00001.parquet"
# The card's `configs` entry: a glob, so a later version may shard the table without a new card format.
TABLE_GLOB = "data/train-*.parquet"
_MANAGED_FILES = frozenset({"README.md", "registry.json", "manifest.jsonl"})
_MANAGED_DIRS = frozenset({"tasks", "data", "validation"})


class PublishedPaths(DatasetPaths):
    """Paths of a published dataset folder (a dataset dir plus the card, the registry and the table)."""

    @property
    def readme(self) -> Path:
        return self.root / "README.md"

    @property
    def registry(self) -> Path:
        return self.root / "registry.json"

    @property
    def table(self) -> Path:
        return self.root / TABLE_PATH


def managed_patterns() -> list[str]:
    """Glob patterns (fnmatch: `*` crosses `/`) of every managed path, for downloading only the layout."""
    return sorted(_MANAGED_FILES) + [f"{d}/*" for d in sorted(_MANAGED_DIRS)]


def is_managed(rel_path: str) -> bool:
    """Whether a repo path belongs to the published layout (and so may be replaced or deleted by a push)."""
    parts = PurePosixPath(rel_path).parts
    if not parts:
        return False
    return rel_path in _MANAGED_FILES or (len(parts) > 1 and parts[0] in _MANAGED_DIRS)


def task_unit(rel_path: str) -> str | None:
    """The task id a repo path belongs to (`tasks/<id>/…`), or None for the dataset-level files."""
    parts = PurePosixPath(rel_path).parts
    return parts[1] if len(parts) > 2 and parts[0] == "tasks" else None


def list_files(root: Path) -> list[str]:
    """Every regular file under `root`, as sorted POSIX paths relative to it."""
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def list_empty_dirs(root: Path) -> list[str]:
    """Every directory under `root` with nothing in it, as sorted POSIX paths relative to it."""
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_dir() and not any(p.iterdir()))

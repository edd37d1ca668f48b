"""Files the environment's build writes into the workspace, which every verifier copy must hold.

A build backend with VCS versions (setuptools-scm, hatch-vcs, …) writes `_version.py` into the package
when the image runs `pip install -e .`; the file is gitignored, so it is not in the snapshot of A. The
task's workspace manifest lists A's files, and the verifier builds every graded copy from the manifest
alone: without the generated module every run of every variant fails at import, and every oracle of the
repo fails validation. So the files the build wrote (read from the sandbox's workspace after its build,
before any test ran there) are written into the task's `environment/repo` too: the manifest then lists
them with the build's content, the image's own build writes them again, and every copy has them.

Only what a build plausibly writes for the package to work is taken: Python modules, and any file inside
a package directory of A (package data). Build and cache trees are left out.
"""

from __future__ import annotations

import posixpath
from pathlib import Path

from repo2rlenv.sandbox.base import Session

# Directories whose content is the build's or a tool's own, never the package's.
_SKIP_DIRS = frozenset({".git", "__pycache__", ".pytest_cache", ".eggs", "build", "dist", ".tox", ".nox",
                        ".mypy_cache", ".ruff_cache", ".hypothesis", "node_modules", ".venv", "venv"})
_SKIP_DIR_SUFFIXES = (".egg-info", ".dist-info")
_MODULE_SUFFIXES = (".py", ".pyi")
MAX_FILES = 100
MAX_BYTES = 1_000_000


def _skipped(rel: str) -> bool:
    parts = rel.split("/")
    name = parts[-1]
    return (any(p in _SKIP_DIRS or p.endswith(_SKIP_DIR_SUFFIXES) for p in parts[:-1])
            or name.endswith((".pyc", ".pyo")) or name.startswith(".coverage"))


def _in_package(a_dir: Path, rel: str) -> bool:
    parent = (a_dir / rel).parent
    return parent != a_dir and (parent / "__init__.py").is_file()


def generated_files(session: Session, a_dir: Path) -> dict[str, str]:
    """Relpath → text of the files in the session's workspace that A's snapshot lacks and the build wrote."""
    res = session.exec(["find", ".", "-type", "f", "-size", f"-{MAX_BYTES // 1024}k"], cwd=session.workspace,
                       timeout=120)
    if res.exit_code != 0:
        return {}
    found: dict[str, str] = {}
    for line in sorted(res.stdout.splitlines()):
        rel = line[2:] if line.startswith("./") else line
        if not rel or _skipped(rel) or (a_dir / rel).exists():
            continue
        if not (rel.endswith(_MODULE_SUFFIXES) or _in_package(a_dir, rel)):
            continue
        data = session.read_file(posixpath.join(session.workspace, rel))
        try:
            text = data.decode("utf-8") if data is not None else None
        except UnicodeDecodeError:
            continue  # a compiled artefact, not something a copy of the sources needs
        if text is not None:
            found[rel] = text
        if len(found) >= MAX_FILES:
            break
    return found

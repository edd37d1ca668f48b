"""Which version to tell a VCS build backend on a snapshot without `.git`.

In order: the latest tag reachable from the commit (when the source is a git repository; one
`git describe`, cheap), the version `git archive` wrote into `.git_archival.txt` (setuptools-scm's
archive support), an sdist's PKG-INFO, else 0.0.0. A real version matters beyond cosmetics: a test
dependency that requires the project itself (a plugin of the project under test) would otherwise make pip
replace the editable install with a release from the index.

The hint is computed once per run for the ref (generate.py); trees of older commits in a commit-pair run
are told the same version, which keeps them sharing environments and is close enough for a build.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from packaging.version import InvalidVersion, Version

FALLBACK_VERSION = "0.0.0"
# A tag's version part: `v1.2.3`, `release-2.0`, `pkg-1.0rc1` → the PEP 440 text after the prefix.
_TAG_VERSION = re.compile(r"(\d+(?:\.\d+)*(?:[._-]?(?:a|b|rc|alpha|beta|c|pre|preview|post|dev)\.?\d*)*)$",
                          re.IGNORECASE)


def version_from_tag(tag: str) -> str | None:
    """The PEP 440 version a tag names (prefixes dropped), or None when it names none."""
    match = _TAG_VERSION.search(tag.strip())
    if not match:
        return None
    try:
        return str(Version(match[1]))
    except InvalidVersion:
        return None


def describe_tag(git_dir: Path, commit: str) -> str | None:
    """The version of the latest tag reachable from `commit`, or None (no tags, not a repo, no git)."""
    try:
        proc = subprocess.run(["git", "-C", str(git_dir), "describe", "--tags", "--abbrev=0", commit],
                              capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return version_from_tag(proc.stdout) if proc.returncode == 0 else None


def _archival(root: Path) -> str | None:
    path = root / ".git_archival.txt"
    if not path.is_file():
        return None
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        key, _, value = line.partition(":")
        if "$Format" in value:  # not expanded: the archive was not made with export-subst
            continue
        if key.strip() == "describe-name":
            # `v1.2.3-4-gabc1234`: the tag, then commits since it and the abbreviated hash.
            found = version_from_tag(re.sub(r"-\d+-g[0-9a-f]+$", "", value.strip()))
            if found:
                return found
        if key.strip() == "ref-names":
            for ref in re.findall(r"tag:\s*([^,\s]+)", value):
                if found := version_from_tag(ref):
                    return found
    return None


def _pkg_info(root: Path) -> str | None:
    path = root / "PKG-INFO"
    if not path.is_file():
        return None
    found = re.search(r"^Version:\s*(\S+)", path.read_text(encoding="utf-8", errors="replace"), re.MULTILINE)
    return found[1] if found else None


def choose_version(root: Path, hint: str | None) -> tuple[str, str]:
    """(version, where it came from) for the snapshot at `root`; `hint` is the source's tag version."""
    if hint:
        return hint, "latest git tag reachable from the ref"
    if found := _archival(root):
        return found, ".git_archival.txt"
    if found := _pkg_info(root):
        return found, "PKG-INFO"
    return FALLBACK_VERSION, "no tag reachable from the ref (fallback)"

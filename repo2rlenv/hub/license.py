"""Which license a task's source repository carries, as a Hub license id, where it can be told.

Read from the repository copy inside the task (`environment/repo`): first the `[project]` table of
`pyproject.toml` (an SPDX expression, `{text = …}`, or a trove classifier), then the text of a
LICENSE/COPYING file matched against a few phrases each common license's text contains. Anything else
is "unknown": the card never guesses a license it cannot see.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

UNKNOWN = "unknown"

# SPDX id (lower case) → the Hub's license id; the Hub uses lower-case SPDX ids for these.
_SPDX_TO_HUB: dict[str, str] = {
    "mit": "mit", "apache-2.0": "apache-2.0", "bsd-3-clause": "bsd-3-clause", "bsd-2-clause": "bsd-2-clause",
    "gpl-3.0": "gpl-3.0", "gpl-3.0-only": "gpl-3.0", "gpl-3.0-or-later": "gpl-3.0", "gpl-2.0": "gpl-2.0",
    "gpl-2.0-only": "gpl-2.0", "gpl-2.0-or-later": "gpl-2.0", "lgpl-3.0": "lgpl-3.0", "lgpl-3.0-only": "lgpl-3.0",
    "lgpl-3.0-or-later": "lgpl-3.0", "lgpl-2.1": "lgpl-2.1", "lgpl-2.1-only": "lgpl-2.1",
    "lgpl-2.1-or-later": "lgpl-2.1", "mpl-2.0": "mpl-2.0", "isc": "isc", "unlicense": "unlicense",
    "agpl-3.0": "agpl-3.0", "agpl-3.0-only": "agpl-3.0", "agpl-3.0-or-later": "agpl-3.0", "psf-2.0": "other",
}

# Words people write instead of an SPDX id (pyproject `license = {text = "…"}`, trove classifiers).
_NAMES_TO_HUB: dict[str, str] = {
    "mit license": "mit", "apache software license": "apache-2.0", "apache license 2.0": "apache-2.0",
    "apache 2.0": "apache-2.0", "bsd license": "bsd-3-clause", "bsd": "bsd-3-clause", "isc license (iscl)": "isc",
    "mozilla public license 2.0 (mpl 2.0)": "mpl-2.0", "the unlicense (unlicense)": "unlicense",
}

# Phrases of a license text, checked in order (the more specific texts first: LGPL before GPL, BSD-3 before
# BSD-2, since BSD-3's text contains all of BSD-2's).
_TEXT_SIGNATURES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("apache-2.0", ("apache license", "version 2.0")),
    ("agpl-3.0", ("gnu affero general public license", "version 3")),
    ("lgpl-3.0", ("gnu lesser general public license", "version 3")),
    ("lgpl-2.1", ("gnu lesser general public license", "version 2.1")),
    ("gpl-3.0", ("gnu general public license", "version 3")),
    ("gpl-2.0", ("gnu general public license", "version 2")),
    ("mpl-2.0", ("mozilla public license", "2.0")),
    ("mit", ("permission is hereby granted, free of charge",)),
    ("isc", ("permission to use, copy, modify, and/or distribute this software for any purpose",)),
    ("bsd-3-clause", ("redistribution and use in source and binary forms", "neither the name")),
    ("bsd-2-clause", ("redistribution and use in source and binary forms",)),
    ("unlicense", ("this is free and unencumbered software released into the public domain",)),
)

_LICENSE_FILE = re.compile(r"^(license|licence|copying)(\.(txt|md|rst))?$", re.IGNORECASE)


def detect_license(repo_root: Path) -> str:
    """The Hub license id of the repository at `repo_root`, or "unknown"."""
    return _from_pyproject(repo_root / "pyproject.toml") or _from_license_file(repo_root) or UNKNOWN


def _from_pyproject(path: Path) -> str | None:
    if not path.is_file():
        return None
    try:
        project = tomllib.loads(path.read_text(encoding="utf-8")).get("project", {})
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        return None
    value = project.get("license")
    text = value.get("text") if isinstance(value, dict) else value
    if isinstance(text, str) and (found := _from_name(text)):
        return found
    for classifier in project.get("classifiers", []):
        if isinstance(classifier, str) and classifier.startswith("License ::"):
            if found := _from_name(classifier.rsplit("::", 1)[-1]):
                return found
    return None


def _from_name(name: str) -> str | None:
    key = name.strip().lower()
    return _SPDX_TO_HUB.get(key) or _NAMES_TO_HUB.get(key)


def _from_license_file(repo_root: Path) -> str | None:
    if not repo_root.is_dir():
        return None
    for path in sorted(repo_root.iterdir()):
        if path.is_file() and _LICENSE_FILE.match(path.name):
            text = " ".join(path.read_text(encoding="utf-8", errors="replace").lower().split())
            for hub_id, phrases in _TEXT_SIGNATURES:
                if all(phrase in text for phrase in phrases):
                    return hub_id
    return None

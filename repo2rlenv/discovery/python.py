"""Which Python a repo gets: the base image whose interpreter satisfies its `requires-python`.

The base images are built by scripts/build_base_image.sh from Debian suites, each with the suite's own
Python (a table; the oldest image that satisfies the project wins, because older suites are what most
projects' pins were made against). An explicit `--base-image` always wins over the table.
"""

from __future__ import annotations

from dataclasses import dataclass

from packaging.specifiers import InvalidSpecifier, SpecifierSet


@dataclass(frozen=True, slots=True)
class BaseImage:
    """A base image and the Python version its /opt/venv runs."""

    tag: str
    python: str  # full version, so a specifier like `>=3.11.4` is judged right
    suite: str


# Oldest first. Versions as Debian ships them (bookworm: 3.11.2, trixie: 3.13.5).
BASE_IMAGES: tuple[BaseImage, ...] = (
    BaseImage("repo2rlenv-base:bookworm", "3.11.2", "bookworm"),
    BaseImage("repo2rlenv-base:trixie", "3.13.5", "trixie"),
)
DEFAULT_IMAGE = BASE_IMAGES[0]


@dataclass(frozen=True, slots=True)
class PythonChoice:
    image: str
    python: str
    reason: str
    satisfied: bool  # False: no image satisfies requires-python (pip is told to ignore it)


def python_of(image: str) -> str | None:
    """The Python version of a known base image tag, None for an image the table does not know."""
    return next((b.python for b in BASE_IMAGES if b.tag == image), None)


def choose_python(requires: tuple[str, str] | None, override: str | None = None) -> PythonChoice:
    """The base image for a project declaring `requires` ((specifier, where)); `override` is --base-image."""
    if override:
        known = python_of(override)
        return PythonChoice(override, known or "unknown", "--base-image", satisfied=True)
    if requires is None:
        return PythonChoice(DEFAULT_IMAGE.tag, DEFAULT_IMAGE.python, "default (no requires-python)", True)
    spec_text, where = requires
    try:
        spec = SpecifierSet(spec_text)
    except InvalidSpecifier:
        return PythonChoice(DEFAULT_IMAGE.tag, DEFAULT_IMAGE.python,
                            f"default ({where} {spec_text!r} is not a valid specifier)", True)
    for image in BASE_IMAGES:
        if spec.contains(image.python, prereleases=True):
            return PythonChoice(image.tag, image.python, f"{where} {spec_text}", True)
    return PythonChoice(DEFAULT_IMAGE.tag, DEFAULT_IMAGE.python,
                        f"no base image satisfies {where} {spec_text}; using the default", False)

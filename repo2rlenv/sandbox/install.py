"""How a repo is installed: detect its packaging, its test extras and its import roots.

One plan serves the Docker sandbox image, the local venv and the emitted task's Dockerfile, so the agent
sees exactly the environment that the gates and the oracle were checked in.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

# Extras that conventionally carry test dependencies, best first.
_TEST_EXTRAS = ("test", "tests", "testing", "dev")
# Requirement files that conventionally carry test dependencies.
_TEST_REQUIREMENTS = (
    "requirements-test.txt", "requirements-tests.txt", "test-requirements.txt", "requirements-dev.txt",
    "requirements/test.txt", "requirements/tests.txt", "requirements/dev.txt",
)
# Tools every run needs, whatever the repo declares.
TOOL_REQUIREMENTS = ("pytest>=8,<10", "coverage>=7.4,<8")


class InstallPlan(BaseModel):
    """What to run (as pip argument lists) to make a repo importable and testable."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    pip_installs: list[list[str]] = Field(description="Each entry: the arguments after `pip install`.")
    import_roots: list[str] = Field(description="Dirs (relative to the repo root) to put first on sys.path.")
    installs_project: bool = Field(description="Whether the repo itself is pip-installed (editable).")
    dependency_files: list[str] = Field(description="Files whose content decides the environment.")


def _pyproject_extras(root: Path) -> list[str]:
    path = root / "pyproject.toml"
    if not path.is_file():
        return []
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        return []
    extras = data.get("project", {}).get("optional-dependencies", {}) or {}
    return list(extras)


def detect_import_roots(root: Path) -> list[str]:
    """`src` for a src layout, else the repo root."""
    src = root / "src"
    if src.is_dir() and any(p.suffix == ".py" or (p / "__init__.py").exists() for p in src.iterdir()):
        return ["src"]
    return [""]


def plan_install(root: Path) -> InstallPlan:
    """Decide how to install the repo snapshot at `root`."""
    installs: list[list[str]] = []
    dep_files: list[str] = []
    installs_project = (root / "pyproject.toml").is_file() or (root / "setup.py").is_file()
    for name in ("pyproject.toml", "setup.py", "setup.cfg", "requirements.txt", *_TEST_REQUIREMENTS):
        if (root / name).is_file():
            dep_files.append(name)
    if (root / "requirements.txt").is_file():
        installs.append(["-r", "requirements.txt"])
    for name in _TEST_REQUIREMENTS:
        if (root / name).is_file():
            installs.append(["-r", name])
            break
    if installs_project:
        extras = [e for e in _TEST_EXTRAS if e in _pyproject_extras(root)]
        target = f".[{extras[0]}]" if extras else "."
        installs.append(["-e", target])
    installs.append(list(TOOL_REQUIREMENTS))
    return InstallPlan(
        pip_installs=installs,
        import_roots=detect_import_roots(root),
        installs_project=installs_project,
        dependency_files=dep_files,
    )

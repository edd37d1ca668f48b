"""The build backend and where the project's version comes from, and how to satisfy it without `.git`.

A snapshot is a `git archive` of one commit: no `.git`, so every backend that asks git for the version
fails ("metadata-generation-failed") unless told the version another way. Each VCS backend has its own
way (a pretend-version variable); versioneer and a few others have none, and get a one-commit `.git`
tagged with the version for the duration of the install (`git_tag`). The variables are build arguments,
never image ENV: a test suite of a versioning tool must not run with a pretend version set.

The rules are a table, tried in order; the first that matches names the version source. A static
version (or a dynamic one read from a file) needs nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Mapping

from pydantic import BaseModel, ConfigDict, Field

from repo2rlenv.discovery.project import Project, dig


class VersionSource(BaseModel):
    """Where the version comes from and what the install needs to compute it on a snapshot."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    backend: str = Field(description="The PEP 517 build backend, e.g. 'hatchling.build' ('setup.py' for legacy).")
    kind: str = Field(description="Version source: a rule name (setuptools-scm, hatch-vcs, …), 'static' or 'dynamic'.")
    declared_in: str = Field(description="The file (and table) that says so.")
    build_env: dict[str, str] = Field(default_factory=dict,
                                      description="Variables set during the install (pretend versions).")
    git_tag: str | None = Field(None, description="Tag of a one-commit .git made for the install, when no "
                                                  "variable can tell the backend the version.")


def _dist_suffix(name: str) -> str:
    # setuptools-scm's per-distribution form: SETUPTOOLS_SCM_PRETEND_VERSION_FOR_MY_PKG.
    return re.sub(r"[-_.]+", "_", name).upper()


def _scm_env(project: Project, version: str, *, global_too: bool) -> dict[str, str]:
    """setuptools-scm's pretend version: per distribution when the name is known; also the global one
    when the caller does not pass setuptools-scm the distribution name (hatch-vcs, flit_scm)."""
    env: dict[str, str] = {}
    if project.name:
        env[f"SETUPTOOLS_SCM_PRETEND_VERSION_FOR_{_dist_suffix(project.name)}"] = version
    if global_too or not project.name:
        env["SETUPTOOLS_SCM_PRETEND_VERSION"] = version
    return env


def _setuptools_scm(p: Project) -> str | None:
    if dig(p.pyproject, "tool", "setuptools_scm") is not None and p.build_requires_any("setuptools-scm"):
        return "pyproject.toml [tool.setuptools_scm]"
    if "use_scm_version" in p.setup_py_text:
        return "setup.py use_scm_version"
    if p.setup_cfg.get("options", "setup_requires", fallback="").lower().replace("-", "_").count("setuptools_scm"):
        return "setup.cfg setup_requires"
    if "version" in (p.project_table.get("dynamic") or []) and p.build_requires_any("setuptools-scm") and (
            (p.build_backend or "").startswith("setuptools")):
        return "pyproject.toml [build-system] requires setuptools-scm"
    return None


def _hatch_vcs(p: Project) -> str | None:
    for data, where in ((p.pyproject, "pyproject.toml [tool.hatch.version]"), (p.hatch_toml, "hatch.toml [version]")):
        table = dig(data, "tool", "hatch", "version") if data is p.pyproject else dig(data, "version")
        if isinstance(table, dict) and table.get("source") == "vcs":
            return where
    return None


def _pdm_scm(p: Project) -> str | None:
    return "pyproject.toml [tool.pdm.version]" if dig(p.pyproject, "tool", "pdm", "version", "source") == "scm" else None


def _flit_scm(p: Project) -> str | None:
    return "pyproject.toml [build-system] flit_scm" if (p.build_backend or "").startswith("flit_scm") else None


def _poetry_dynamic(p: Project) -> str | None:
    if dig(p.pyproject, "tool", "poetry-dynamic-versioning", "enable") is True:
        return "pyproject.toml [tool.poetry-dynamic-versioning]"
    if (p.build_backend or "").startswith("poetry_dynamic_versioning"):
        return "pyproject.toml [build-system] poetry_dynamic_versioning"
    return None


def _versioneer(p: Project) -> str | None:
    if dig(p.pyproject, "tool", "versioneer") is not None:
        return "pyproject.toml [tool.versioneer]"
    if p.setup_cfg.has_section("versioneer"):
        return "setup.cfg [versioneer]"
    if re.search(r"^\s*import versioneer\b", p.setup_py_text, re.MULTILINE):
        return "setup.py imports versioneer"
    return None


def _versioneer_prefix(p: Project) -> str:
    prefix = dig(p.pyproject, "tool", "versioneer", "tag_prefix")
    if prefix is None:
        prefix = p.setup_cfg.get("versioneer", "tag_prefix", fallback="")
    prefix = str(prefix).strip().strip("'\"")
    return "" if prefix in ("''", '""') else prefix


def _versioningit(p: Project) -> str | None:
    if dig(p.pyproject, "tool", "versioningit") is not None or dig(p.pyproject, "tool", "hatch", "version",
                                                                   "source") == "versioningit":
        return "pyproject.toml [tool.versioningit]"
    return None


def _setuptools_git_versioning(p: Project) -> str | None:
    table = dig(p.pyproject, "tool", "setuptools-git-versioning")
    if isinstance(table, dict) and table.get("enabled", False):
        return "pyproject.toml [tool.setuptools-git-versioning]"
    return "setup.py setuptools_git_versioning" if "setuptools_git_versioning" in p.setup_py_text else None


def _pbr(p: Project) -> str | None:
    return "setup.py pbr=True" if p.setup_py_kwargs.get("pbr") is True else None


@dataclass(frozen=True, slots=True)
class VersionRule:
    """One way a project takes its version from git, and how to satisfy it on a snapshot."""

    kind: str
    detect: Callable[[Project], str | None]  # where it is declared, or None
    env: Callable[[Project, str], dict[str, str]]  # the build variables for a version
    git_tag: Callable[[Project, str], str | None] = lambda p, v: None  # a one-commit .git's tag, if needed


def _no_env(p: Project, v: str) -> dict[str, str]:
    return {}


# Tried in order: a project can name several (setuptools-scm in requires *and* hatch-vcs as the source),
# and the more specific rule wins.
VERSION_RULES: tuple[VersionRule, ...] = (
    VersionRule("hatch-vcs", _hatch_vcs, lambda p, v: _scm_env(p, v, global_too=True)),
    VersionRule("pdm-backend scm", _pdm_scm, lambda p, v: {"PDM_BUILD_SCM_VERSION": v}),
    VersionRule("flit-scm", _flit_scm, lambda p, v: _scm_env(p, v, global_too=True)),
    VersionRule("poetry-dynamic-versioning", _poetry_dynamic, lambda p, v: {"POETRY_DYNAMIC_VERSIONING_BYPASS": v}),
    # A name set only in setup.cfg/setup.py is not yet known when setuptools-scm < 8 reads its variables
    # (python-dateutil: LookupError despite the _FOR_ form), so legacy configurations get the global one.
    VersionRule("setuptools-scm", _setuptools_scm,
                lambda p, v: _scm_env(p, v, global_too=not isinstance(p.project_table.get("name"), str))),
    # No variable reaches these; they read `git describe`, so they get a repository holding one tag.
    VersionRule("versioneer", _versioneer, _no_env, lambda p, v: _versioneer_prefix(p) + v),
    VersionRule("versioningit", _versioningit, _no_env, lambda p, v: "v" + v),
    VersionRule("setuptools-git-versioning", _setuptools_git_versioning, _no_env, lambda p, v: "v" + v),
    VersionRule("pbr", _pbr, lambda p, v: {"PBR_VERSION": v}),
)


def _backend_name(p: Project) -> str:
    if p.build_backend:
        return p.build_backend
    return "setup.py (legacy setuptools)" if (p.root / "setup.py").is_file() else "setuptools (default)"


def _static_or_dynamic(p: Project) -> tuple[str, str]:
    if isinstance(p.project_table.get("version"), str):
        return "static", "pyproject.toml [project] version"
    if isinstance(dig(p.pyproject, "tool", "poetry", "version"), str):
        return "static", "pyproject.toml [tool.poetry] version"
    if p.setup_cfg.get("metadata", "version", fallback=None):
        return "static", "setup.cfg [metadata] version"
    if isinstance(p.setup_py_kwargs.get("version"), str):
        return "static", "setup.py version="
    if "version" in (p.project_table.get("dynamic") or []):
        return "dynamic", "pyproject.toml [project] dynamic (read by the backend, not from git)"
    return "dynamic", "computed by the build backend"


def detect_version_source(project: Project, version: str) -> VersionSource:
    """The version source of `project` and what makes it computable as `version` on a snapshot."""
    backend = _backend_name(project)
    for rule in VERSION_RULES:
        where = rule.detect(project)
        if where is not None:
            return VersionSource(backend=backend, kind=rule.kind, declared_in=where,
                                 build_env=rule.env(project, version), git_tag=rule.git_tag(project, version))
    kind, where = _static_or_dynamic(project)
    return VersionSource(backend=backend, kind=kind, declared_in=where)


def rule_kinds() -> Mapping[str, VersionRule]:
    """The table keyed by kind (a test checks the kinds are unique)."""
    return {rule.kind: rule for rule in VERSION_RULES}

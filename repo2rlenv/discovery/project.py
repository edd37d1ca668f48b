"""The packaging files of a repo snapshot, read once: pyproject.toml, setup.cfg, setup.py, tox.ini, hatch.toml.

Every discovery rule reads the project through this one value, so a file is parsed once and a broken file
(invalid TOML, an ini that configparser refuses) reads as absent instead of stopping the run: discovery
only ever adds what it can prove, and the install step reports what the backend itself thinks.
"""

from __future__ import annotations

import ast
import configparser
import re
import tomllib
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any


def normalize_name(name: str) -> str:
    """PEP 503 normalised distribution name (`Foo_Bar.baz` → `foo-bar-baz`)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def read_toml(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        return {}


def read_ini(path: Path | None = None, text: str | None = None) -> configparser.ConfigParser:
    # interpolation=None: tox and setup.cfg values hold `{posargs}` and `%` that are not ours to expand.
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        if text is not None:
            parser.read_string(text)
        elif path is not None and path.is_file():
            parser.read_string(path.read_text(encoding="utf-8", errors="replace"))
    except configparser.Error:
        return configparser.ConfigParser(interpolation=None)
    return parser


def dig(data: Any, *keys: str) -> Any:
    """`data[k1][k2]…`, or None when any level is missing or not a table."""
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def _setup_call(tree: ast.Module) -> ast.Call | None:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if name == "setup":
                return node
    return None


@dataclass
class Project:
    """The packaging facts of the snapshot at `root` (parsed lazily, each file once)."""

    root: Path

    def _file(self, rel: str) -> Path:
        return self.root / rel

    @cached_property
    def pyproject(self) -> dict[str, Any]:
        return read_toml(self._file("pyproject.toml"))

    @cached_property
    def setup_cfg(self) -> configparser.ConfigParser:
        return read_ini(self._file("setup.cfg"))

    @cached_property
    def setup_py_text(self) -> str:
        path = self._file("setup.py")
        return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""

    @cached_property
    def setup_py_kwargs(self) -> dict[str, Any]:
        """The literal keyword arguments of setup.py's `setup(...)` call (non-literals are left out)."""
        try:
            call = _setup_call(ast.parse(self.setup_py_text))
        except (SyntaxError, ValueError):
            return {}
        out: dict[str, Any] = {}
        for kw in call.keywords if call else []:
            if kw.arg is None:
                continue
            try:
                out[kw.arg] = ast.literal_eval(kw.value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                out[kw.arg] = ...  # present, but computed
        return out

    @cached_property
    def tox_ini(self) -> configparser.ConfigParser:
        """tox's configuration: tox.ini, else setup.cfg's [tox:tox] sections, else pyproject's legacy_tox_ini."""
        if (self.root / "tox.ini").is_file():
            return read_ini(self._file("tox.ini"))
        legacy = dig(self.pyproject, "tool", "tox", "legacy_tox_ini")
        if isinstance(legacy, str):
            return read_ini(text=legacy)
        cfg = self.setup_cfg
        if cfg.has_section("tox:tox"):
            return cfg
        return read_ini()

    @cached_property
    def tox_toml(self) -> tuple[dict[str, Any], str] | None:
        """tox 4's native TOML configuration and where it is: tox.toml, else pyproject's [tool.tox] table
        when it is not the legacy ini text (that one is `tox_ini`)."""
        if (self.root / "tox.toml").is_file():
            return read_toml(self._file("tox.toml")), "tox.toml"
        table = dig(self.pyproject, "tool", "tox")
        if isinstance(table, dict) and "legacy_tox_ini" not in table:
            return table, "pyproject.toml [tool.tox]"
        return None

    @cached_property
    def hatch_toml(self) -> dict[str, Any]:
        return read_toml(self._file("hatch.toml"))

    @property
    def project_table(self) -> dict[str, Any]:
        table = self.pyproject.get("project")
        return table if isinstance(table, dict) else {}

    @cached_property
    def name(self) -> str | None:
        """The distribution name, from wherever the project states it literally."""
        for value in (self.project_table.get("name"), dig(self.pyproject, "tool", "poetry", "name"),
                      self.setup_cfg.get("metadata", "name", fallback=None), self.setup_py_kwargs.get("name")):
            if isinstance(value, str) and value.strip():
                return value.strip()
        return None

    @property
    def build_requires(self) -> list[str]:
        requires = dig(self.pyproject, "build-system", "requires")
        return [r for r in requires if isinstance(r, str)] if isinstance(requires, list) else []

    @property
    def build_backend(self) -> str | None:
        backend = dig(self.pyproject, "build-system", "build-backend")
        return backend if isinstance(backend, str) else None

    def build_requires_any(self, *names: str) -> bool:
        """Whether build-system.requires (or setup.cfg/setup.py setup_requires) names one of `names`."""
        wanted = {normalize_name(n) for n in names}
        setup_requires = self.setup_cfg.get("options", "setup_requires", fallback="").split()
        kw = self.setup_py_kwargs.get("setup_requires")
        if isinstance(kw, (list, tuple)):
            setup_requires += [str(r) for r in kw]
        for req in [*self.build_requires, *setup_requires]:
            match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", req)
            if match and normalize_name(match[1]) in wanted:
                return True
        return False

    @property
    def requires_python(self) -> tuple[str, str] | None:
        """(specifier, where it was declared) when the project states one."""
        for value, where in (
            (self.project_table.get("requires-python"), "pyproject.toml [project] requires-python"),
            (dig(self.pyproject, "tool", "poetry", "dependencies", "python"),
             "pyproject.toml [tool.poetry.dependencies] python"),
            (self.setup_cfg.get("options", "python_requires", fallback=None), "setup.cfg python_requires"),
            (self.setup_py_kwargs.get("python_requires"), "setup.py python_requires"),
        ):
            if isinstance(value, str) and value.strip():
                return value.strip(), where
        return None

    def extras(self) -> dict[str, str]:
        """Extra name → where it is declared (pyproject, setup.cfg, setup.py literal)."""
        out: dict[str, str] = {}
        optional = self.project_table.get("optional-dependencies")
        for name in optional if isinstance(optional, dict) else {}:
            out.setdefault(name, "pyproject.toml [project.optional-dependencies]")
        poetry = dig(self.pyproject, "tool", "poetry", "extras")
        for name in poetry if isinstance(poetry, dict) else {}:
            out.setdefault(name, "pyproject.toml [tool.poetry.extras]")
        if self.setup_cfg.has_section("options.extras_require"):
            for name in self.setup_cfg.options("options.extras_require"):
                out.setdefault(name, "setup.cfg [options.extras_require]")
        kw = self.setup_py_kwargs.get("extras_require")
        for name in kw if isinstance(kw, dict) else {}:
            out.setdefault(str(name), "setup.py extras_require")
        return out

    @property
    def installable(self) -> bool:
        """Whether pip can install the snapshot itself (a build backend or a setup.py is present)."""
        has_pyproject = (self.root / "pyproject.toml").is_file()
        return ((self.root / "setup.py").is_file() or "build-system" in self.pyproject or "project" in self.pyproject
                or (has_pyproject and self.setup_cfg.has_section("metadata")))

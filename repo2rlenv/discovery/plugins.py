"""pytest plugins and test libraries the suite uses but the project forgot to declare.

Read from the test files and conftests (with `ast`, never imported): top-level imports, `pytest_plugins`,
`pytest.mark.<name>` markers and fixture parameters; and from the pytest configuration: `-p` in addopts,
`required_plugins`, and ini keys that belong to a plugin (`asyncio_mode`). Each signal maps to a
distribution through one of the tables below; a distribution already declared, or an import name that is
a module of the repo itself, adds nothing.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Callable, Iterator, Mapping

from repo2rlenv.discovery.project import Project, normalize_name
from repo2rlenv.discovery.pytest_setup import pytest_table, words
from repo2rlenv.discovery.requirements import Dep

# Top-level import name → distribution (test tooling only: a runtime dependency the project forgot is
# the project's bug, not something to guess).
IMPORTS: Mapping[str, str] = {
    "hypothesis": "hypothesis", "freezegun": "freezegun", "time_machine": "time-machine",
    "pytest_asyncio": "pytest-asyncio", "pytest_benchmark": "pytest-benchmark", "pytest_timeout": "pytest-timeout",
    "pytest_mock": "pytest-mock", "mock": "mock", "responses": "responses", "requests_mock": "requests-mock",
    "respx": "respx", "pytest_httpx": "pytest-httpx", "pytest_httpserver": "pytest-httpserver",
    "pytest_lazyfixture": "pytest-lazy-fixture", "pytest_cases": "pytest-cases", "pytest_subtests": "pytest-subtests",
    "syrupy": "syrupy", "inline_snapshot": "inline-snapshot", "dirty_equals": "dirty-equals",
    "pytest_regressions": "pytest-regressions", "testfixtures": "testfixtures", "parameterized": "parameterized",
    "trustme": "trustme", "faker": "Faker", "factory": "factory-boy", "pyfakefs": "pyfakefs",
    "pytest_trio": "pytest-trio", "pytest_xdist": "pytest-xdist", "xdist": "pytest-xdist",
    "pytest_cov": "pytest-cov", "pytest_randomly": "pytest-randomly", "pytest_rerunfailures": "pytest-rerunfailures",
    "pytest_env": "pytest-env", "pytest_socket": "pytest-socket", "pytest_doctestplus": "pytest-doctestplus",
    "pytest_datadir": "pytest-datadir", "pytest_freezer": "pytest-freezer", "pytest_freezegun": "pytest-freezegun",
    "vcr": "vcrpy", "pytest_recording": "pytest-recording", "aioresponses": "aioresponses",
    "pytest_localserver": "pytest-localserver", "pytest_check": "pytest-check", "nose2": "nose2",
    "pexpect": "pexpect", "flaky": "flaky", "pytest_order": "pytest-order", "pytest_lazy_fixtures": "pytest-lazy-fixtures",
}
# Fixture parameter name → the plugin that provides it.
FIXTURES: Mapping[str, str] = {
    "mocker": "pytest-mock", "class_mocker": "pytest-mock", "module_mocker": "pytest-mock",
    "benchmark": "pytest-benchmark", "freezer": "pytest-freezer", "httpx_mock": "pytest-httpx",
    "requests_mock": "requests-mock", "respx_mock": "respx", "httpserver": "pytest-httpserver",
    "time_machine": "time-machine", "fs": "pyfakefs", "datadir": "pytest-datadir", "shared_datadir": "pytest-datadir",
    "snapshot": "syrupy", "data_regression": "pytest-regressions", "file_regression": "pytest-regressions",
    "faker": "Faker", "event_loop": "pytest-asyncio", "aioresponses": "aioresponses",
}
# `pytest.mark.<name>` → the plugin that implements it (unknown markers only warn, but do nothing).
MARKERS: Mapping[str, str] = {
    "asyncio": "pytest-asyncio", "timeout": "pytest-timeout", "benchmark": "pytest-benchmark",
    "trio": "pytest-trio", "vcr": "pytest-recording", "freeze_time": "pytest-freezer", "order": "pytest-order",
    "randomize": "pytest-randomly", "httpx_mock": "pytest-httpx",
}
# pytest ini keys that only a plugin reads (pytest refuses unknown keys under --strict-config).
INI_KEYS: Mapping[str, str] = {
    "asyncio_mode": "pytest-asyncio", "asyncio_default_fixture_loop_scope": "pytest-asyncio",
    "timeout": "pytest-timeout", "timeout_method": "pytest-timeout", "mock_use_standalone_module": "pytest-mock",
    "env": "pytest-env", "doctest_plus": "pytest-doctestplus", "rerun_failures": "pytest-rerunfailures",
}
# addopts flags → the plugin that defines them (pytest stops with a usage error on an unknown flag).
FLAGS: Mapping[str, str] = {
    "--cov": "pytest-cov", "--no-cov": "pytest-cov", "-n": "pytest-xdist", "--numprocesses": "pytest-xdist",
    "--dist": "pytest-xdist", "--timeout": "pytest-timeout", "--benchmark-": "pytest-benchmark",
    "--hypothesis-": "hypothesis", "--doctest-plus": "pytest-doctestplus", "--reruns": "pytest-rerunfailures",
    "--randomly-": "pytest-randomly", "--mypy": "pytest-mypy",
    "--snapshot-": "syrupy", "--inline-snapshot": "inline-snapshot", "--record-mode": "pytest-recording",
}
_SKIP_DIRS = {".git", ".tox", ".nox", ".venv", "venv", "env", "node_modules", "build", "dist", "site-packages",
              "__pycache__", ".eggs"}
_MAX_FILES = 3000
_MAX_BYTES = 1_000_000


def test_files(root: Path) -> Iterator[Path]:
    """conftest.py, test_*.py and *_test.py files, outside virtualenvs and build output."""
    count = 0
    stack = [root]
    while stack and count < _MAX_FILES:
        here = stack.pop()
        try:
            entries = sorted(here.iterdir())
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir() and not entry.is_symlink():
                if entry.name not in _SKIP_DIRS and not entry.name.endswith(".egg-info"):
                    stack.append(entry)
            elif entry.suffix == ".py" and (entry.name == "conftest.py" or entry.name.startswith("test_")
                                            or entry.name.endswith("_test.py")):
                count += 1
                yield entry


def _read_root_file(project: Project) -> Callable[[str], str | None]:
    def read(rel: str) -> str | None:
        path = project.root / rel
        try:
            return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None
        except OSError:
            return None
    return read


def _local_modules(root: Path) -> set[str]:
    names = set()
    for base in (root, root / "src"):
        if base.is_dir():
            for entry in base.iterdir():
                if entry.suffix == ".py" or (entry.is_dir() and (entry / "__init__.py").exists()):
                    names.add(entry.stem)
    return names


def parse_test_file(path: Path) -> ast.Module | None:
    """A test file's syntax tree, or None when it is too large or does not parse."""
    try:
        if path.stat().st_size > _MAX_BYTES:
            return None
        return ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, SyntaxError, ValueError):
        return None


def imported_tops(node: ast.AST) -> list[str]:
    """The top-level module names an `import` or absolute `from … import` node names (else none)."""
    if isinstance(node, ast.Import):
        return [alias.name.split(".")[0] for alias in node.names]
    if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
        return [node.module.split(".")[0]]
    return []


def _scan(path: Path, rel: str) -> Iterator[tuple[str, str]]:
    """(distribution, why) for every table hit in one test file."""
    tree = parse_test_file(path)
    if tree is None:
        return
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield from ((IMPORTS[top], f"{rel} imports {top}") for top in imported_tops(node) if top in IMPORTS)
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytest_plugins"
                                                  for t in node.targets):
            try:
                value = ast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError):
                continue
            for plugin in [value] if isinstance(value, str) else value if isinstance(value, (list, tuple)) else []:
                top = str(plugin).split(".")[0]
                if top in IMPORTS:
                    yield IMPORTS[top], f"{rel} pytest_plugins {plugin}"
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) and node.value.attr == "mark":
            if node.attr in MARKERS:
                yield MARKERS[node.attr], f"{rel} uses @pytest.mark.{node.attr}"
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for arg in node.args.args:
                if arg.arg in FIXTURES:
                    yield FIXTURES[arg.arg], f"{rel} {node.name}() takes the {arg.arg} fixture"


def _from_config(project: Project) -> Iterator[tuple[str, str]]:
    found = pytest_table(_read_root_file(project))
    if found is None:
        return
    name, section, options = found
    where = f"{name} {section}".strip()
    for key in options:
        if key in INI_KEYS:
            yield INI_KEYS[key], f"{where} sets {key}"
    for spec in words(options.get("required_plugins")):
        yield spec, f"{where} required_plugins"
    args = words(options.get("addopts"))
    for i, arg in enumerate(args):
        if arg == "-p" and i + 1 < len(args) or arg.startswith("-p") and len(arg) > 2:
            name = args[i + 1] if arg == "-p" else arg[2:]
            top = name.split(".")[0]
            if top in IMPORTS:
                yield IMPORTS[top], f"{where} addopts -p {name}"
            continue
        for flag, dist in FLAGS.items():
            if arg == flag or (flag.endswith("-") and arg.startswith(flag)) or arg.startswith(flag + "="):
                yield dist, f"{where} addopts {arg}"


def discover_plugins(project: Project, declared: set[str]) -> list[Dep]:
    """Undeclared plugins and test libraries the suite needs (`declared`: normalised names already
    installed by the plan)."""
    local = _local_modules(project.root)
    found: dict[str, Dep] = {}
    hits = list(_from_config(project))
    for path in test_files(project.root):
        hits += _scan(path, path.relative_to(project.root).as_posix())
    for spec, why in hits:
        name = normalize_name(re.split(r"[\s\[<>=!~;]", spec, maxsplit=1)[0])
        module = spec.replace("-", "_").lower()
        if name in declared or name in found or module in local:
            continue
        found[name] = Dep(spec=spec, source=why)
    return list(found.values())

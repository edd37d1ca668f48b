"""Test dependencies, from wherever projects keep them, each with where it came from.

Sources (a table, in precedence order; a distribution named twice keeps its first spec):
optional-dependency extras with the usual names, PEP 735 `[dependency-groups]` (with `include-group`),
hatch environments, pdm dev-dependencies, poetry groups, uv dev-dependencies, requirements files
(`requirements*test*.txt`, `requirements/` dirs, `-r` includes), tox's `[testenv]` deps/extras/
dependency_groups, and noxfile `session.install(...)` literals (read with `ast`, never executed).
Lines that cannot install here are kept as `Dropped` with the reason.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from pydantic import BaseModel, ConfigDict, Field

from repo2rlenv.discovery.project import Project, dig, normalize_name
from repo2rlenv.discovery.requirements import (
    Dep,
    Dropped,
    classify,
    logical_lines,
    read_requirement_file,
    requirement_name,
)

# Names under which projects keep test dependencies (extras, groups, envs), best first; the dev names
# are used only when no test name exists, because they tend to carry linters and docs tools too.
TEST_NAMES = ("test", "tests", "testing", "unittest", "unit", "pytest")
DEV_NAMES = ("dev", "develop", "development")
# Requirement files with test dependencies (globs, relative to the root); the dev files only when no
# test file matches, as for the names.
TEST_FILE_GLOBS = ("requirements*test*.txt", "test*requirements*.txt", "requirements/test*.txt",
                   "requirements/*test*.txt", "tests/requirements*.txt", "test/requirements*.txt",
                   "ci/requirements*test*.txt")
DEV_FILE_GLOBS = ("requirements*dev*.txt", "dev*requirements*.txt", "requirements/dev*.txt")
RUNTIME_FILES = ("requirements.txt",)
# Tools that dev groups and files carry but no test run imports (linters, type stubs, docs, release
# tooling): each one is minutes of install and a chance to fail for nothing. Matched on the normalised
# name; a `*` suffix matches a prefix.
NOT_FOR_TESTS = ("ruff", "black", "flake8*", "isort", "pylint", "pycodestyle", "pydocstyle", "autopep8",
                 "pre-commit", "codespell", "docformatter", "pyright", "types-*", "sphinx*", "furo", "mkdocs*",
                 "myst-parser", "twine", "towncrier", "reno", "bump2version", "bumpversion", "commitizen",
                 "check-manifest", "tox", "tox-*", "nox", "hatch", "poethepoet", "pip-tools", "uv")
# tox environments whose settings are the test run's (besides the base [testenv]).
TOX_ENVS = ("testenv", "testenv:py", "testenv:py3", "testenv:test", "testenv:tests", "testenv:pytest",
            "testenv:unit")


class TestDeps(BaseModel):
    """What the suite needs besides the project: extras of the project's install and requirements."""

    __test__ = False
    model_config = ConfigDict(extra="forbid", frozen=True)

    extras: list[Dep] = Field(default_factory=list, description="Extras of the project's own install (spec = extra).")
    requirements: list[Dep] = Field(default_factory=list, description="Requirements installed beside it.")
    dropped: list[Dropped] = Field(default_factory=list, description="Declared lines left out, with reasons.")
    files: list[str] = Field(default_factory=list, description="Files read (they decide the environment).")


@dataclass
class _Collector:
    project: Project
    extras: dict[str, str] = field(default_factory=dict)
    requirements: dict[str, Dep] = field(default_factory=dict)
    dropped: list[Dropped] = field(default_factory=list)
    files: list[str] = field(default_factory=list)

    def add_extra(self, name: str, source: str) -> None:
        if name in self.project.extras():
            self.extras.setdefault(name, source)
        else:
            self.dropped.append(Dropped(spec=f".[{name}]", source=source, reason="the project has no such extra"))

    def add_line(self, line: str, source: str) -> None:
        meaning = classify(line, self.project.name)
        if meaning.kind == "req":
            key = requirement_name(str(meaning.value))
            if _not_for_tests(key):
                self.dropped.append(Dropped(spec=line.strip(), source=source,
                                            reason="a lint/docs/release tool, not needed to run the tests"))
                return
            self.requirements.setdefault(key, Dep(spec=str(meaning.value), source=source))
        elif meaning.kind == "extras":
            for extra in meaning.value:
                self.add_extra(str(extra), source)
        elif meaning.kind == "include":
            self.add_file(str(meaning.value), source)
        else:
            self.dropped.append(Dropped(spec=line.strip(), source=source, reason=str(meaning.value)))

    def add_file(self, rel: str, source: str | None = None) -> None:
        rel = rel.removeprefix("./")
        lines, files = read_requirement_file(self.project.root, rel)
        if not files:
            self.dropped.append(Dropped(spec=f"-r {rel}", source=source or rel, reason="file not in the snapshot"))
            return
        self.files += [f for f in files if f not in self.files]
        for line in lines:
            self.add_line(line, f"{rel}" if source is None else f"{source} → {rel}")


def _not_for_tests(name: str) -> bool:
    return any(name.startswith(p[:-1]) if p.endswith("*") else name == p for p in NOT_FOR_TESTS)


def _pick(names: list[str]) -> list[str]:
    """The test-named entries of `names`, else the dev-named ones."""
    tests = [n for n in names if normalize_name(n) in TEST_NAMES]
    return tests or [n for n in names if normalize_name(n) in DEV_NAMES]


def _extras(c: _Collector) -> None:
    declared = c.project.extras()
    for name in _pick(list(declared)):
        c.add_extra(name, declared[name])


def _group_lines(groups: dict[str, Any], name: str, seen: set[str]) -> list[str]:
    if name in seen or not isinstance(groups.get(name), list):
        return []
    seen.add(name)
    out: list[str] = []
    for item in groups[name]:
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict) and isinstance(item.get("include-group"), str):
            out += _group_lines(groups, item["include-group"], seen)
    return out


def _add_groups(c: _Collector, names: list[str], via: str = "") -> None:
    groups = c.project.pyproject.get("dependency-groups")
    if not isinstance(groups, dict):
        return
    for name in names:
        by_norm = {normalize_name(g): g for g in groups}
        real = by_norm.get(normalize_name(name))
        if real is None:
            continue
        for line in _group_lines(groups, real, set()):
            c.add_line(line, f"pyproject.toml [dependency-groups] {real}{via}")


def _dependency_groups(c: _Collector) -> None:
    groups = c.project.pyproject.get("dependency-groups")
    if isinstance(groups, dict):
        _add_groups(c, _pick(list(groups)))


def _hatch(c: _Collector) -> None:
    for data, prefix, label in ((c.project.pyproject, ("tool", "hatch", "envs"), "pyproject.toml [tool.hatch.envs."),
                                (c.project.hatch_toml, ("envs",), "hatch.toml [envs.")):
        envs = dig(data, *prefix)
        if not isinstance(envs, dict):
            continue
        for name in ("default", "hatch-test", *TEST_NAMES):
            env = envs.get(name)
            if not isinstance(env, dict):
                continue
            for key in ("dependencies", "extra-dependencies"):
                for line in env.get(key) or []:
                    if isinstance(line, str):
                        c.add_line(line, f"{label}{name}] {key}")
            for extra in env.get("features") or []:
                if isinstance(extra, str):
                    c.add_extra(extra, f"{label}{name}] features")


def _pdm(c: _Collector) -> None:
    groups = dig(c.project.pyproject, "tool", "pdm", "dev-dependencies")
    if isinstance(groups, dict):
        for name in _pick(list(groups)):
            for line in groups[name] if isinstance(groups[name], list) else []:
                if isinstance(line, str):
                    c.add_line(line, f"pyproject.toml [tool.pdm.dev-dependencies] {name}")


def _poetry_spec(name: str, value: Any) -> str | None:
    """A poetry dependency as PEP 508 (caret/tilde ranges keep only their lower bound), or None for
    path/git/url dependencies."""
    extras: list[str] = []
    if isinstance(value, dict):
        if any(k in value for k in ("path", "git", "url")):
            return None
        extras = [e for e in value.get("extras") or [] if isinstance(e, str)]
        value = value.get("version", "*")
    if isinstance(value, list):  # multiple constraints by marker: take the name only
        value = "*"
    constraint = str(value).strip()
    lower = re.match(r"^[\^~]=?\s*([\w.]+)$", constraint)
    if lower:
        constraint = f">={lower[1]}"
    elif constraint in ("*", ""):
        constraint = ""
    elif re.match(r"^\d", constraint):
        constraint = f"=={constraint}"
    return f"{name}{'[' + ','.join(extras) + ']' if extras else ''}{constraint}"


def _poetry(c: _Collector) -> None:
    poetry = dig(c.project.pyproject, "tool", "poetry")
    if not isinstance(poetry, dict):
        return
    tables: list[tuple[str, Any]] = []
    groups = poetry.get("group")
    if isinstance(groups, dict):
        tables += [(f"pyproject.toml [tool.poetry.group.{n}]", dig(groups, n, "dependencies")) for n in _pick(list(groups))]
    tables.append(("pyproject.toml [tool.poetry.dev-dependencies]", poetry.get("dev-dependencies")))
    for source, table in tables:
        for name, value in table.items() if isinstance(table, dict) else ():
            if name == "python":
                continue
            spec = _poetry_spec(name, value)
            if spec is None:
                c.dropped.append(Dropped(spec=name, source=source, reason="a path/git/url dependency"))
            else:
                c.add_line(spec, source)


def _uv(c: _Collector) -> None:
    for line in dig(c.project.pyproject, "tool", "uv", "dev-dependencies") or []:
        if isinstance(line, str):
            c.add_line(line, "pyproject.toml [tool.uv] dev-dependencies")


def _requirement_files(c: _Collector) -> None:
    root = c.project.root
    for rel in RUNTIME_FILES:
        if (root / rel).is_file():
            c.add_file(rel)
    for globs in (TEST_FILE_GLOBS, DEV_FILE_GLOBS):
        found = sorted({p.relative_to(root).as_posix() for g in globs for p in root.glob(g) if p.is_file()})
        for rel in found:
            c.add_file(rel)
        if found:
            return


_TOX_REF = re.compile(r"\{\[([^\]]+)\]([\w-]+)\}")


def _tox(c: _Collector) -> None:
    ini = c.project.tox_ini
    label = "tox.ini" if (c.project.root / "tox.ini").is_file() else "tox configuration"
    for section in TOX_ENVS:
        if not ini.has_section(section):
            continue
        source = f"{label} [{section}]"
        raw = ini.get(section, "deps", fallback="")
        # `{[testenv]deps}` references are the one substitution worth doing: envs share deps with it.
        raw = _TOX_REF.sub(lambda m: ini.get(m[1], m[2], fallback="") if ini.has_section(m[1]) else m[0], raw)
        for line in logical_lines(raw):
            line = line.replace("{toxinidir}/", "").replace("{toxinidir}", ".")
            if re.match(r"^[!\w,{}.-]+:\s", line):  # `py38: foo` holds for some factors only
                c.dropped.append(Dropped(spec=line, source=source, reason="tox factor-conditional"))
                continue
            c.add_line(line, f"{source} deps")
        for extra in re.split(r"[\s,]+", ini.get(section, "extras", fallback="")):
            if extra and ":" not in extra:
                c.add_extra(extra, f"{source} extras")
        groups = [g for g in re.split(r"[\s,]+", ini.get(section, "dependency_groups", fallback="")) if g]
        _add_groups(c, groups, via=f" (named by {source})")


# tox 4's native TOML configuration (tox.toml, or pyproject's [tool.tox] without legacy_tox_ini): the base
# of every run env, then the envs named like a test run's.
TOX_TOML_ENVS = ("test", "tests", "py", "py3", "pytest", "unit")


def _tox_toml(c: _Collector) -> None:
    found = c.project.tox_toml
    if found is None:
        return
    table, label = found
    envs = table.get("env") if isinstance(table.get("env"), dict) else {}
    sections = [("env_run_base", table.get("env_run_base"))] + [(f"env.{n}", envs.get(n)) for n in TOX_TOML_ENVS]
    for name, env in sections:
        if not isinstance(env, dict):
            continue
        source = f"{label} [{name}]"
        for dep in env.get("deps") or []:
            if isinstance(dep, str):  # a {replace = ...} table is a substitution we do not evaluate
                c.add_line(dep.replace("{tox_root}/", "").replace("{tox_root}", "."), f"{source} deps")
        for extra in env.get("extras") or []:
            if isinstance(extra, str):
                c.add_extra(extra, f"{source} extras")
        _add_groups(c, [g for g in env.get("dependency_groups") or [] if isinstance(g, str)], via=f" (named by {source})")


def _nox_sessions(tree: ast.Module) -> list[ast.FunctionDef]:
    out = []
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        for deco in node.decorator_list:
            target = deco.func if isinstance(deco, ast.Call) else deco
            text = ast.unparse(target)
            if not text.endswith("session"):
                continue
            name = node.name
            if isinstance(deco, ast.Call):
                for kw in deco.keywords:
                    if kw.arg == "name" and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str):
                        name = kw.value.value
            if "test" in name.lower() or name.lower() in ("pytest", "unit"):
                out.append(node)
    return out


def _nox(c: _Collector) -> None:
    path = c.project.root / "noxfile.py"
    if not path.is_file():
        return
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    except SyntaxError:
        return
    # Module-level literal lists (`TEST_DEPS = ["pytest", …]`) that `session.install(*TEST_DEPS)` spreads.
    consts: dict[str, list[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                value = ast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError):
                continue
            if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
                consts[node.targets[0].id] = list(value)
    for func in _nox_sessions(tree):
        source = f"noxfile.py session {func.name}"
        for call in ast.walk(func):
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "install"):
                continue
            args: list[str] = []
            for arg in call.args:
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    args.append(arg.value)
                elif isinstance(arg, ast.Starred) and isinstance(arg.value, ast.Name) and arg.value.id in consts:
                    args += consts[arg.value.id]
            i = 0
            while i < len(args):
                if args[i] in ("-r", "--requirement", "-e", "--editable", "-c", "--constraint") and i + 1 < len(args):
                    c.add_line(f"{args[i]} {args[i + 1]}", source)
                    i += 2
                    continue
                c.add_line(args[i], source)
                i += 1


# The sources, in precedence order (a distribution's first spec wins).
SOURCES: tuple[tuple[str, Callable[[_Collector], None]], ...] = (
    ("extras", _extras),
    ("dependency-groups", _dependency_groups),
    ("hatch", _hatch),
    ("pdm", _pdm),
    ("poetry", _poetry),
    ("uv", _uv),
    ("requirements files", _requirement_files),
    ("tox", _tox),
    ("tox (TOML)", _tox_toml),
    ("nox", _nox),
)


def discover_test_deps(project: Project) -> TestDeps:
    """Every test dependency `project` declares, with its source; what cannot install is dropped."""
    c = _Collector(project)
    for _, source in SOURCES:
        source(c)
    return TestDeps(extras=[Dep(spec=name, source=src) for name, src in c.extras.items()],
                    requirements=list(c.requirements.values()), dropped=c.dropped, files=c.files)

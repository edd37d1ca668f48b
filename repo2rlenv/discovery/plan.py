"""The install plan: everything discovery found, as one frozen value a user can read.

One plan serves the Docker sandbox image, the local venv and the emitted task's Dockerfile (all three
render it through `install_steps`), so the agent sees exactly the environment that the gates and the
oracle were checked in. `describe()` is the plan as a user reads it: one (label, value with its source)
row per fact.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from repo2rlenv.discovery.backend import VersionSource, detect_version_source
from repo2rlenv.discovery.plugins import discover_plugins
from repo2rlenv.discovery.project import Project, dig, normalize_name
from repo2rlenv.discovery.python import choose_python
from repo2rlenv.discovery.suite_imports import imported_names, split_by_use
from repo2rlenv.discovery.requirements import Dep, Dropped, applies_here, requirement_name
from repo2rlenv.discovery.testdeps import discover_test_deps
from repo2rlenv.discovery.version import choose_version

# Tools every run needs, whatever the repo declares.
TOOL_REQUIREMENTS = ("pytest>=8,<10", "coverage>=7.4,<8")
# Files pip itself reads when installing the project: their bytes decide the environment.
_PACKAGING_FILES = ("pyproject.toml", "setup.py", "setup.cfg", "PKG-INFO", ".git_archival.txt")
# What git needs to make the one-commit repository some version sources read (no host identity).
_GIT_IDENTITY = ("-c", "user.name=repo2rlenv", "-c", "user.email=build@repo2rlenv.invalid",
                 "-c", "commit.gpgsign=false")
_SAFE_VALUE = re.compile(r"^[\w.+!-]+$")


class InstallPlan(BaseModel):
    """What to run to make a repo importable and testable, and why (every fact carries its source)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    pip_installs: list[list[str]] = Field(description="Each entry: the arguments after `pip install`.")
    import_roots: list[str] = Field(description="Dirs (relative to the repo root) to put first on sys.path.")
    installs_project: bool = Field(description="Whether the repo itself is pip-installed (editable).")
    dependency_files: list[str] = Field(description="Files whose content decides the environment.")
    project_name: str | None = Field(None, description="The distribution name, when stated literally.")
    version_source: VersionSource | None = Field(None, description="Build backend and where the version comes from.")
    version: str = Field("0.0.0", description="The version a VCS backend is told on the snapshot.")
    version_origin: str = Field("", description="Where `version` came from.")
    extras: list[Dep] = Field(default_factory=list, description="Extras of the editable install.")
    test_requirements: list[Dep] = Field(default_factory=list, description="Requirements installed beside it.")
    optional_requirements: list[Dep] = Field(
        default_factory=list, description="Declared test/dev requirements the test files do not import: each "
        "installed on its own after the rest, and dropped with pip's reason when it fails (OPTIONAL_DROPS).")
    plugins: list[Dep] = Field(default_factory=list, description="Undeclared plugins the suite needs.")
    dropped: list[Dropped] = Field(default_factory=list, description="Declared lines left out, with reasons.")
    base_image: str = Field("repo2rlenv-base:bookworm", description="The image the environment starts FROM.")
    python: str = Field("3.11.2", description="That image's Python version.")
    python_reason: str = Field("", description="Why this image (requires-python, default, --base-image).")
    requires_python: str | None = Field(None, description="The project's requires-python, as declared.")
    install_files: dict[str, str] = Field(default_factory=dict, description="Files the install alone sees "
                                          "(written before pip, removed after), e.g. a license text a build "
                                          "plugin would otherwise download.")
    install_files_reason: str = Field("", description="Why the install needs them.")
    compiles: str | None = Field(None, description="Where the project declares C extensions it compiles at "
                                 "install (the images then get a C compiler and Python headers), else None.")

    @property
    def build_env(self) -> dict[str, str]:
        """Variables set while installing (pretend versions); never part of the runtime environment."""
        return dict(self.version_source.build_env) if self.version_source else {}

    @property
    def git_tag(self) -> str | None:
        return self.version_source.git_tag if self.version_source else None

    def environment_inputs(self) -> str:
        """Everything in the plan that changes the built environment, as canonical text (for keys)."""
        inputs = {"pip": self.pip_installs, "env": self.build_env, "git_tag": self.git_tag, "image": self.base_image}
        if self.optional_requirements:
            inputs["optional"] = [d.spec for d in self.optional_requirements]
        # Only when set: plans made before these facts existed keep their keys (and their cached images).
        if self.compiles:
            inputs["compiler"] = True
        if self.install_files:
            inputs["install_files"] = self.install_files
        return json.dumps(inputs, sort_keys=True)

    def describe(self) -> list[tuple[str, str]]:
        """The plan as a user reads it: (label, value with where it came from)."""
        rows: list[tuple[str, str]] = []
        vs = self.version_source
        rows.append(("project", self.project_name or "(unnamed)" if self.installs_project else "not installable "
                     "(no setup.py or [build-system]); tests run from the source tree"))
        if vs is not None:
            rows.append(("build backend", vs.backend))
            how = ""
            if vs.build_env:
                how = "; set during the install: " + ", ".join(f"{k}={v}" for k, v in sorted(vs.build_env.items()))
            elif vs.git_tag:
                how = f"; the install sees a one-commit .git tagged {vs.git_tag}"
            version = f"{self.version} ({self.version_origin})" if vs.build_env or vs.git_tag else ""
            rows.append(("version source", f"{vs.kind} — {vs.declared_in}" + (f"; version {version}" if version else "")
                         + how))
        rows.append(("python", f"{self.python} in {self.base_image} ({self.python_reason})"))
        if self.install_files:
            rows.append(("install file", f"{', '.join(sorted(self.install_files))} written for the install only "
                         f"— {self.install_files_reason}"))
        if self.compiles:
            rows.append(("compiler", f"{' '.join(COMPILER_PACKAGES)} added to the image when it has no C compiler "
                         f"— {self.compiles}"))
        rows += [("extra", f".[{d.spec}] — {d.source}") for d in self.extras]
        rows += [("test dependency", f"{d.spec} — {d.source}") for d in self.test_requirements]
        rows += [("optional dependency", f"{d.spec} — {d.source}; not imported by the tests, installed on its own "
                  "and dropped if it fails") for d in self.optional_requirements]
        rows += [("plugin", f"{d.spec} — {d.source}") for d in self.plugins]
        rows += [("dropped", f"{d.spec} — {d.source}: {d.reason}") for d in self.dropped]
        rows.append(("import roots", ", ".join(r or "." for r in self.import_roots)))
        rows += [("install", "pip install " + " ".join(args)) for args in self.pip_installs]
        return rows


# Debian packages that let an image build a C extension against its own Python (the base images are Debian's).
COMPILER_PACKAGES = ("gcc", "libc6-dev", "python3-dev")
# What in setup.py declares a compiled extension (setuptools `Extension(...)`, `ext_modules=`, cffi, Cython).
_EXTENSION_CALL = re.compile(r"\b(?:Extension|cythonize)\s*\(|\b(?:ext_modules|cffi_modules)\s*=")


def detect_extensions(project: Project) -> str | None:
    """Where the project declares C extensions built at install time (None for pure-Python projects).

    Optional speedups (`try: setup(ext_modules=…) except BuildFailed: setup()`) are declared the same way
    and need the compiler as much: without one, setuptools' editable build of the fallback fails."""
    text = project.setup_py_text
    if text:
        code = "\n".join(line.split("#", 1)[0] for line in text.splitlines())
        match = _EXTENSION_CALL.search(code)
        if match:
            return f"setup.py declares {match.group(0).rstrip('=( ').strip()}"
    if dig(project.pyproject, "tool", "setuptools", "ext-modules"):
        return "pyproject.toml [tool.setuptools] ext-modules"
    return None


def detect_install_files(project: Project) -> tuple[dict[str, str], str]:
    """Files a build plugin would fetch from the network during the install, written beforehand instead.

    coherent.licensed (the jaraco skeleton's backend plugin) downloads the text of the SPDX `license` into
    LICENSE when the snapshot has none; an image built where that host is unreachable then fails in
    `get_requires_for_build_editable`. The text only reaches the installed metadata, so a line naming the
    license stands in for it, and is removed once the install is done."""
    if not project.build_requires_any("coherent.licensed") or (project.root / "LICENSE").exists():
        return {}, ""
    expression = project.project_table.get("license")
    expression = expression if isinstance(expression, str) and _SAFE_VALUE.match(expression) else "UNKNOWN"
    text = f"SPDX-License-Identifier: {expression} (the text is not part of the snapshot)\n"
    return ({"LICENSE": text}, "pyproject.toml [build-system] requires coherent.licensed, which downloads the "
            "license text into a missing LICENSE while building")


def detect_import_roots(root: Path) -> list[str]:
    """`src` for a src layout, else the repo root."""
    src = root / "src"
    if src.is_dir() and any(p.suffix == ".py" or (p / "__init__.py").exists() for p in src.iterdir()):
        return ["src"]
    return [""]


def _safe(env: dict[str, str]) -> dict[str, str]:
    # Values end up in a Dockerfile ARG line and a shell: versions only ever match this.
    return {k: v for k, v in env.items() if _SAFE_VALUE.match(v)}


def plan_install(root: Path, *, version_hint: str | None = None, base_image: str | None = None) -> InstallPlan:
    """Decide how to install the repo snapshot at `root`.

    `version_hint`: the version of the latest tag reachable from the snapshot's commit (None when the
    source has no git). `base_image`: an explicit --base-image; None picks one from requires-python.
    """
    project = Project(root)
    installs_project = project.installable
    version, origin = choose_version(root, version_hint)
    source = detect_version_source(project, version) if installs_project else None
    if source is not None:
        source = source.model_copy(update={"build_env": _safe(source.build_env),
                                           "git_tag": source.git_tag if source.git_tag and _SAFE_VALUE.match(
                                               source.git_tag) else None})
    deps = discover_test_deps(project)
    choice = choose_python(project.requires_python, base_image)
    # A requirement whose marker excludes this Python (`hypothesis; python_version < '3.8'`) declares
    # nothing here: a test file importing it still needs it.
    declared = {requirement_name(d.spec) for d in deps.requirements if applies_here(d.spec, choice.python)}
    declared |= {normalize_name(n) for n in _runtime_names(project)}
    if project.name:
        declared.add(normalize_name(project.name))
    plugins = discover_plugins(project, declared | {"pytest", "coverage"})

    used, optional = split_by_use(deps.requirements, imported_names(root))
    specs = [d.spec for d in used] + [d.spec for d in plugins]
    installs: list[list[str]] = []
    first: list[str] = []
    if installs_project:
        extras = ",".join(d.spec for d in deps.extras)
        first = ["-e", f".[{extras}]" if extras else "."]
    first += specs
    if first:
        if not choice.satisfied:
            first.insert(0, "--ignore-requires-python")
        installs.append(first)
    installs.append(list(TOOL_REQUIREMENTS))
    files_for_install, files_reason = detect_install_files(project) if installs_project else ({}, "")
    files = sorted({rel for rel in _PACKAGING_FILES if (root / rel).is_file()} | set(deps.files))
    return InstallPlan(
        pip_installs=installs, import_roots=detect_import_roots(root), installs_project=installs_project,
        dependency_files=files, project_name=project.name, version_source=source, version=version,
        version_origin=origin, extras=deps.extras, test_requirements=used, plugins=plugins,
        optional_requirements=optional,
        dropped=deps.dropped, base_image=choice.image, python=choice.python, python_reason=choice.reason,
        requires_python=project.requires_python[0] if project.requires_python else None,
        compiles=detect_extensions(project) if installs_project else None,
        install_files=files_for_install, install_files_reason=files_reason)


def _runtime_names(project: Project) -> list[str]:
    """Names of the project's runtime dependencies (a plugin they already pull in is not added)."""
    lines = [d for d in project.project_table.get("dependencies") or [] if isinstance(d, str)]
    lines += project.setup_cfg.get("options", "install_requires", fallback="").splitlines()
    kw = project.setup_py_kwargs.get("install_requires")
    lines += [str(x) for x in kw] if isinstance(kw, (list, tuple)) else []
    names = [m[1] for line in lines if (m := re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", line))]
    poetry = project.pyproject.get("tool", {}).get("poetry", {}).get("dependencies", {})
    return names + [n for n in poetry if n != "python"] if isinstance(poetry, dict) else names


# Where an environment records the optional requirements it could not install (under the venv's prefix:
# outside the workspace, so the snapshot and the task's repo copy never see it).
OPTIONAL_DROPS = "r2e-dropped.jsonl"
# One line (a Dockerfile RUN and a local step run it alike): pip installs argv[1]; on failure, the first
# error line pip printed is appended to OPTIONAL_DROPS as {"spec", "reason"} and the step still succeeds.
_OPTIONAL_INSTALL = (
    "import json, pathlib, subprocess, sys; "
    "r = subprocess.run([sys.executable, '-m', 'pip', 'install', '-q', sys.argv[1]], capture_output=True, text=True); "
    "e = [l.strip() for l in r.stderr.splitlines() if l.strip()]; "
    "r.returncode and open(pathlib.Path(sys.prefix, '" + OPTIONAL_DROPS + "'), 'a').write(json.dumps("
    "{'spec': sys.argv[1], 'reason': ([l for l in e if l.lower().startswith('error')] or e "
    "or ['pip exited %d' % r.returncode])[0][:300]}) + chr(10))")


def install_steps(plan: InstallPlan, python: str) -> list[list[str]]:
    """The argv of each step that installs `plan` with `python`, run in the snapshot's directory with
    `plan.build_env` set (the Docker images and the local venv run exactly these)."""
    steps: list[list[str]] = []
    if plan.git_tag:
        steps += [["git", "init", "-q"], ["git", "add", "-A"],
                  ["git", *_GIT_IDENTITY, "commit", "-q", "--allow-empty", "--no-verify", "-m", "snapshot"],
                  ["git", "tag", plan.git_tag]]
    for rel, text in sorted(plan.install_files.items()):
        steps.append([python, "-c", f"import pathlib; pathlib.Path({rel!r}).write_text({text!r})"])
    steps += [[python, "-m", "pip", "install", "-q", *args] for args in plan.pip_installs]
    steps += [[python, "-c", _OPTIONAL_INSTALL, d.spec] for d in plan.optional_requirements]
    if plan.install_files:
        steps.append(["rm", "-f", *sorted(plan.install_files)])  # the sessions see the snapshot alone
    if plan.git_tag:
        steps.append(["rm", "-rf", ".git"])  # only the install needed it; sessions see the snapshot alone
    return steps

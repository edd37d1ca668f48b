"""Environment images built for real from what discovery finds, one tiny project per rule: a snapshot
without .git whose version comes from git (hatch-vcs, setuptools-scm, versioneer), test dependencies kept
only in [dependency-groups] or tox.ini, and a requires-python the default image cannot satisfy."""

from __future__ import annotations

import json

import pytest

from repo2rlenv.sandbox.base import Limits

STATIC = ('[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n'
          '[project]\nname = "{name}"\nversion = "0.3"\n')
# Printed from inside a session: what the suite would see.
PROBE = """\
import importlib, importlib.metadata, json, os, sys
print(json.dumps({
    "python": "%d.%d" % sys.version_info[:2],
    "version": importlib.metadata.version(sys.argv[1]),
    "imports": [importlib.import_module(m).__name__ for m in sys.argv[2:]],
    "pretend": sorted(k for k in os.environ if "PRETEND" in k),
    "git": os.path.exists("/workspace/.git"),
}))
"""

OPTIONAL_SPEEDUPS = """\
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import CCompilerError, ExecError, PlatformError


class BuildFailed(Exception):
    pass


class optional_build_ext(build_ext):
    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except (CCompilerError, ExecError, PlatformError) as e:
            raise BuildFailed() from e


def run(with_c):
    setup(packages=["cext"], cmdclass={"build_ext": optional_build_ext},
          ext_modules=[Extension("cext._speed", ["cext/_speed.c"])] if with_c else [])


try:
    run(True)
except BuildFailed:
    run(False)
"""

PROJECTS = {
    "hatch-vcs": ({
        "pyproject.toml": '[build-system]\nrequires = ["hatchling", "hatch-vcs"]\nbuild-backend = "hatchling.build"\n'
                          '[project]\nname = "hv-pkg"\ndynamic = ["version"]\n[tool.hatch.version]\nsource = "vcs"\n'
                          '[tool.hatch.build.targets.wheel]\npackages = ["src/hvpkg"]\n',
        "src/hvpkg/__init__.py": "",
    }, "hv-pkg", ["hvpkg"], "1.2.3"),
    "setuptools-scm": ({
        "pyproject.toml": '[build-system]\nrequires = ["setuptools>=64", "setuptools-scm>=8"]\n'
                          'build-backend = "setuptools.build_meta"\n'
                          '[project]\nname = "scm_pkg"\ndynamic = ["version"]\n[tool.setuptools_scm]\n',
        "scm_pkg/__init__.py": "",
    }, "scm_pkg", ["scm_pkg"], "1.2.3"),
    # versioneer reads `git describe` and nothing else: the install gets a one-commit .git with the tag.
    "versioneer": ({
        "pyproject.toml": '[build-system]\nrequires = ["setuptools", "versioneer[toml]"]\n'
                          'build-backend = "setuptools.build_meta"\n[project]\nname = "vpkg"\ndynamic = ["version"]\n'
                          '[tool.versioneer]\nVCS = "git"\nstyle = "pep440"\nversionfile_source = "vpkg/_version.py"\n'
                          'versionfile_build = "vpkg/_version.py"\ntag_prefix = "v"\nparentdir_prefix = "vpkg-"\n',
        "setup.py": "import versioneer\nfrom setuptools import setup\n"
                    "setup(version=versioneer.get_version(), cmdclass=versioneer.get_cmdclass(), packages=['vpkg'])\n",
        "vpkg/__init__.py": "",
    }, "vpkg", ["vpkg"], "1.2.3"),
    "dependency-groups": ({
        "pyproject.toml": STATIC.format(name="dgpkg") + '[dependency-groups]\ntest = [{include-group = "base"}]\n'
                                                        'base = ["freezegun"]\n',
        "dgpkg/__init__.py": "",
    }, "dgpkg", ["dgpkg", "freezegun"], "0.3"),
    "tox-deps": ({
        "pyproject.toml": STATIC.format(name="toxpkg"),
        "tox.ini": "[tox]\nenvlist = py3\n[testenv]\ndeps =\n    tomli-w\n    -e .\ncommands = pytest {posargs}\n",
        "toxpkg/__init__.py": "",
    }, "toxpkg", ["toxpkg", "tomli_w"], "0.3"),
    "requires-python": ({
        "pyproject.toml": STATIC.format(name="newpy") + 'requires-python = ">=3.12"\n',
        "newpy/__init__.py": "import sys\nassert sys.version_info >= (3, 12)\n",
    }, "newpy", ["newpy"], "0.3"),
    # Optional C speedups (setup() run again without them when the build fails): the base image has no
    # compiler, and setuptools' editable build of the fallback fails, so the image gets gcc and headers.
    "c-extension": ({
        "pyproject.toml": STATIC.format(name="cext"),
        "setup.py": OPTIONAL_SPEEDUPS,
        "cext/__init__.py": "",
        "cext/_speed.c": "#include <Python.h>\n"
                         "static struct PyModuleDef m = {PyModuleDef_HEAD_INIT, \"_speed\", NULL, -1, NULL};\n"
                         "PyMODINIT_FUNC PyInit__speed(void) { return PyModule_Create(&m); }\n",
    }, "cext", ["cext", "cext._speed"], "0.3"),
}
PYTHON = {"requires-python": "3.13"}


@pytest.mark.slow
@pytest.mark.parametrize("rule", list(PROJECTS))
def test_discovery_builds_an_environment_the_suite_can_use(rule, tmp_path, docker_ready):
    from repo2rlenv.sandbox.docker import DockerSandbox

    files, dist, modules, version = PROJECTS[rule]
    root = tmp_path / rule
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    # No --base-image: the plan picks it (trixie for requires-python >= 3.12).
    sandbox = DockerSandbox(base_image=None, limits=Limits(timeout_sec=120, memory_mb=1024),
                            tag_name=f"r2e-discovery-{rule}", version_hint="1.2.3")
    sandbox.prepare(root)
    with sandbox.open() as session:
        session.write_files({f"{session.scratch}/probe.py": PROBE})
        res = session.exec([session.python, f"{session.scratch}/probe.py", dist, *modules], timeout=60)
    assert res.exit_code == 0, res.tail()
    seen = json.loads(res.stdout.strip().splitlines()[-1])
    assert seen == {"python": PYTHON.get(rule, "3.11"), "version": version, "imports": modules, "pretend": [],
                    "git": False}
    expected_image = "repo2rlenv-base:trixie" if rule == "requires-python" else "repo2rlenv-base:bookworm"
    assert sandbox.plan is not None and sandbox.plan.base_image == expected_image


@pytest.mark.slow
@pytest.mark.parametrize("rule", ["setuptools-scm", "versioneer"])
def test_the_local_venv_is_built_with_the_same_plan(rule, tmp_path):
    from repo2rlenv.sandbox.local import LocalSandbox

    files, dist, modules, version = PROJECTS[rule]
    root = tmp_path / rule
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    sandbox = LocalSandbox(limits=Limits(timeout_sec=120, memory_mb=2048), cache_dir=tmp_path / "cache",
                           version_hint="1.2.3")
    sandbox.prepare(root)
    with sandbox.open() as session:
        session.write_files({f"{session.scratch}/probe.py": PROBE})
        res = session.exec([session.python, f"{session.scratch}/probe.py", dist, *modules], timeout=60)
    assert res.exit_code == 0, res.tail()
    seen = json.loads(res.stdout.strip().splitlines()[-1])
    assert (seen["version"], seen["imports"], seen["pretend"]) == (version, modules, [])
    assert not any((tmp_path / "cache").rglob(".git"))  # the tagged repository lived for the install only

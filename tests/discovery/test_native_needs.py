"""Which raw-memory modules a project's import loads, found in a real sandbox (the Docker one, as
generation uses it)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from repo2rlenv.discovery.native_needs import session_native_needs, top_level_modules
from repo2rlenv.sandbox.base import Limits

PYPROJECT = """[project]
name = "{name}"
version = "0.1.0"

[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"
"""


def _project(root: Path, name: str, body: str) -> Path:
    (root / "src" / name).mkdir(parents=True)
    (root / "src" / name / "__init__.py").write_text(body)
    (root / "pyproject.toml").write_text(PYPROJECT.format(name=name))
    (root / "tests").mkdir()
    (root / "tests" / "test_it.py").write_text(f"import {name}\n\n\ndef test_it():\n    assert {name}\n")
    (root / "noxfile.py").write_text("raise SystemExit('never imported')\n")
    return root


def test_top_level_modules_are_the_project_and_not_its_tests_or_scripts(tmp_path):
    root = _project(tmp_path / "p", "calc", "")
    (root / "src" / "helpers.py").write_text("")
    (root / "src" / "_private.py").write_text("")
    assert top_level_modules(root, ["src"]) == ["calc", "helpers"]
    assert top_level_modules(root, [""]) == []  # noxfile.py and tests/ are not the project


@pytest.mark.parametrize(("body", "expected"), [("import ctypes\n", ["_ctypes"]), ("import json\n", [])],
                         ids=["imports ctypes", "plain"])
def test_the_probe_finds_ctypes_when_the_import_loads_it(tmp_path, docker_ready, body, expected):
    from repo2rlenv.sandbox.docker import DockerSandbox

    root = _project(tmp_path / "proj", "calc", body)
    sandbox = DockerSandbox(base_image=os.environ.get("R2E_BASE_IMAGE", "repo2rlenv-base:bookworm"),
                            limits=Limits(timeout_sec=120, memory_mb=1024, pids=256), tag_name="native-needs")
    sandbox.prepare(root)
    session = sandbox.open()
    try:
        assert session_native_needs(session, root, ["src"]) == expected
    finally:
        session.close()


def test_the_probe_finds_what_the_suite_s_conftest_loads(tmp_path, docker_ready):
    # urllib3: the package imports no cffi, its test/conftest.py imports trustme → cryptography → cffi, and every
    # graded run loads that conftest: a task that refuses the module crashes on A.
    from repo2rlenv.discovery.native_needs import conftest_files
    from repo2rlenv.sandbox.docker import DockerSandbox

    root = _project(tmp_path / "proj", "calc", "import json\n")
    (root / "tests" / "conftest.py").write_text("import ctypes\n")
    (root / ".venv" / "x").mkdir(parents=True)
    (root / ".venv" / "x" / "conftest.py").write_text("raise SystemExit('not the suite')\n")
    assert conftest_files(root) == ["tests/conftest.py"]
    sandbox = DockerSandbox(base_image=os.environ.get("R2E_BASE_IMAGE", "repo2rlenv-base:bookworm"),
                            limits=Limits(timeout_sec=120, memory_mb=1024, pids=256), tag_name="native-needs")
    sandbox.prepare(root)
    session = sandbox.open()
    try:
        assert session_native_needs(session, root, ["src"]) == ["_ctypes"]
    finally:
        session.close()


def _session(root: Path):
    from repo2rlenv.sandbox.docker import DockerSandbox

    sandbox = DockerSandbox(base_image=os.environ.get("R2E_BASE_IMAGE", "repo2rlenv-base:bookworm"),
                            limits=Limits(timeout_sec=120, memory_mb=1024, pids=256), tag_name="native-needs")
    sandbox.prepare(root)
    return sandbox.open()


def test_a_plugin_whose_import_loads_a_refused_module_is_left_out_of_graded_runs(tmp_path, docker_ready):
    # Issue 34: jsonpickle's image has jaraco.vcs.fixtures (a pytest11 entry point) importing ctypes; loaded with
    # -p under the barrier it aborted every graded run's start. Plugins here are modules of the project (the
    # probe falls back to importing the name when no entry point has it, as `-p` does).
    from repo2rlenv.discovery.native_needs import session_plugin_refusals

    root = _project(tmp_path / "proj", "calc", "")
    (root / "src" / "calc_vcs_fixtures.py").write_text("import ctypes\n")
    (root / "src" / "calc_fixtures.py").write_text("import json\n")
    session = _session(root)
    try:
        left_out = session_plugin_refusals(session, ["calc_vcs_fixtures", "calc_fixtures"], ["src"])
        assert list(left_out) == ["calc_vcs_fixtures"] and "_ctypes" in left_out["calc_vcs_fixtures"]
        # The project's own import exposes ctypes already: the plugin adds nothing graded runs refuse.
        assert session_plugin_refusals(session, ["calc_vcs_fixtures"], ["src"], expose=["_ctypes"]) == {}
    finally:
        session.close()


def test_a_target_needs_what_its_import_fails_without_not_what_it_merely_loads(tmp_path, docker_ready):
    # pandas imports ctypes unconditionally (jsonpickle.ext.pandas: exposed for that task, as docs/integrity.md
    # says); numpy loads it but does without; readline is refused by the allowlist by name (like gmpy2, which
    # imports PyRun_StringFlags): a module that cannot import without it has no task that can grade.
    from repo2rlenv.discovery.native_needs import TargetNeeds, session_target_needs

    root = _project(tmp_path / "proj", "calc", "")
    modules = {"hard": "import ctypes\n", "soft": "try:\n    import ctypes\nexcept ImportError:\n    ctypes = None\n",
               "refused": "import readline\n", "optional": "try:\n    import readline\nexcept ImportError:\n    pass\n",
               "plain": "import json\n", "numeric": "import sys\nsys.modules['numpy'] = sys\n"}  # numpy, as the probe sees it (not in the image)
    for name, body in modules.items():
        (root / "src" / "calc" / f"{name}.py").write_text(body)
    session = _session(root)
    try:
        needs = {name: session_target_needs(session, f"calc.{name}", ["src"]) for name in modules}
    finally:
        session.close()
    assert needs["hard"] == TargetNeeds(exposed=("_ctypes",))
    assert needs["numeric"] == TargetNeeds(exposed=("numpy",))  # loaded, never refused: recorded
    assert needs["soft"] == needs["optional"] == needs["plain"] == TargetNeeds()
    assert list(needs["refused"].refused) == ["readline"] and "readline" in needs["refused"].why()

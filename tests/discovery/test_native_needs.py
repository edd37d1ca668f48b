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

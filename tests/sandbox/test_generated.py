"""Files the build writes into the workspace reach every task's repo, manifest and verifier copies: a
repo whose build backend writes a gitignored module gets tasks that validate (Docker, real build)."""

from __future__ import annotations

import json
import posixpath

import pytest

from repo2rlenv.config import GenerateConfig
from repo2rlenv.generate import run_generate
from repo2rlenv.dataset.manifest import load_validation
from repo2rlenv.sandbox.generated import generated_files
from repo2rlenv.progress import Reporter
from repo2rlenv.sandbox.base import Limits
from repo2rlenv.dataset.taskdir import DatasetPaths


def test_only_what_a_build_writes_is_taken(request, tmp_path, r2e_cache, tiny_package, make_repo):
    root = make_repo(tiny_package("def test_x():\n    pass\n"), commit=False)
    sandbox = request.getfixturevalue("make_sandbox")("local", Limits(timeout_sec=60), "generated-test", r2e_cache)
    sandbox.prepare(root)
    with sandbox.open() as session:
        ws = session.workspace
        session.write_files({
            posixpath.join(ws, "tinypkg/_version.py"): "version = '1.0'\n",  # a VCS version module
            posixpath.join(ws, "tinypkg/schema.json"): "{}\n",  # package data a build wrote
            posixpath.join(ws, "tinypkg/__pycache__/core.cpython-311.pyc"): "x",
            posixpath.join(ws, "tinypkg.egg-info/PKG-INFO"): "Name: tinypkg\n",
            posixpath.join(ws, "build/lib/tinypkg/core.py"): "",
            posixpath.join(ws, "notes.txt"): "not a module, not in a package\n",
        })
        found = generated_files(session, root)
    assert found == {"tinypkg/_version.py": "version = '1.0'\n", "tinypkg/schema.json": "{}\n"}


BACKEND = '''\
"""setuptools, plus a module written at build time (as setuptools-scm writes _version.py)."""
import os

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F401,F403


def _write_build_info():
    with open(os.path.join("src", "minicart", "_build_info.py"), "w") as handle:
        handle.write('BUILT_BY = "the build backend"\\n')


def build_editable(*args, **kwargs):
    _write_build_info()
    return _setuptools.build_editable(*args, **kwargs)


def build_wheel(*args, **kwargs):
    _write_build_info()
    return _setuptools.build_wheel(*args, **kwargs)
'''


@pytest.mark.slow
def test_a_repo_whose_build_writes_a_gitignored_module_has_tasks_that_validate(example_repo, tmp_path,
                                                                              docker_ready, r2e_cache):
    pyproject = example_repo / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace(
        'build-backend = "setuptools.build_meta"', 'build-backend = "backend"\nbackend-path = ["_build"]'))
    (example_repo / "_build").mkdir()
    (example_repo / "_build" / "backend.py").write_text(BACKEND)
    (example_repo / ".gitignore").write_text("src/minicart/_build_info.py\n")
    init = example_repo / "src" / "minicart" / "__init__.py"
    init.write_text("from ._build_info import BUILT_BY  # noqa: F401\n" + init.read_text())
    assert not (example_repo / "src" / "minicart" / "_build_info.py").exists()
    out = tmp_path / "ds"
    config = GenerateConfig(repo=str(example_repo), out=out, sandbox="docker", cache_dir=r2e_cache,
                            pipeline_opts={"strategy": "mutation", "limit": 1, "seed": 3, "validate_tasks": True})
    result = run_generate(config, Reporter(quiet=True))
    assert len(result.emitted) == 1, result.skip_reasons
    task = DatasetPaths(out).task(result.emitted[0])
    manifest = json.loads(task.workspace_manifest.read_text())["files"]
    assert "src/minicart/_build_info.py" in manifest
    assert (task.repo / "src" / "minicart" / "_build_info.py").read_text() == 'BUILT_BY = "the build backend"\n'
    # Emitted means validated (validate_tasks): the oracle scored 1.0 in the task's own image.
    summary = load_validation(DatasetPaths(out), task.root.name)
    assert summary is not None and summary.ok and summary.oracle_reward == 1.0

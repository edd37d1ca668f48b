"""Environments per dependency spec, for real: trees with equal dependency files share one image (venv),
a changed dependency file builds a second one, each session sees exactly its own tree, a rerun reuses."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from repo2rlenv.errors import SandboxError
from repo2rlenv.sandbox.base import Limits
from repo2rlenv.sandbox.environments import (
    EnvironmentBuildError,
    EnvironmentPool,
    dependency_key,
    environment_plan,
    file_hashes,
)
from repo2rlenv.sandbox.install import TOOL_REQUIREMENTS, plan_install

PYPROJECT = ('[project]\nname = "envpkg"\nversion = "0.1"\n'
             '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n')
# One probe prints what the session imports and which files its workspace holds.
PROBE = ("import envpkg, os, sys\n"
         "print(envpkg.VALUE)\n"
         "print(sorted(os.listdir(os.path.join(sys.argv[1], 'envpkg'))))\n")


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


@pytest.fixture
def trees(tmp_path: Path) -> dict[str, Path]:
    """first, same_deps (other source, same dependency files), new_deps (pyproject changed)."""
    base = {"pyproject.toml": PYPROJECT, "envpkg/__init__.py": "VALUE = 'first'\n", "envpkg/only_first.py": "",
            "tests/test_it.py": "def test_ok():\n    assert True\n"}
    first = _tree(tmp_path / "first", base)
    same = {k: v for k, v in base.items() if k != "envpkg/only_first.py"}
    same_deps = _tree(tmp_path / "same_deps", {**same, "envpkg/__init__.py": "VALUE = 'second'\n",
                                                 "envpkg/only_second.py": ""})
    new_deps = _tree(tmp_path / "new_deps", {**same, "envpkg/__init__.py": "VALUE = 'third'\n",
                                               "pyproject.toml": PYPROJECT.replace('"0.1"', '"0.2"')})
    return {"first": first, "same_deps": same_deps, "new_deps": new_deps}


def test_the_key_follows_dependency_files_and_install_commands_only(trees):
    def key(name: str, salt: str = "s") -> str:
        return dependency_key(trees[name], plan_install(trees[name]), salt)

    assert key("first") == key("same_deps")
    assert key("first") != key("new_deps")
    assert key("first") != key("first", salt="another base image")
    (trees["same_deps"] / "requirements-test.txt").write_text("pytest\n")
    assert key("first") != key("same_deps")  # a new requirements file changes the install commands too


def test_file_hashes_lists_every_file_relative_to_the_root(trees):
    hashes = file_hashes(trees["first"])
    assert sorted(hashes) == ["envpkg/__init__.py", "envpkg/only_first.py", "pyproject.toml", "tests/test_it.py"]
    assert hashes["envpkg/only_first.py"] == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


UV_LOCK = """\
version = 1
[[package]]
name = "pluggy"
version = "1.5.0"

[[package]]
name = "pytest"
version = "8.3.5"
"""


@pytest.mark.parametrize("files,pytest_spec", [
    ({}, TOOL_REQUIREMENTS[0]),
    ({"uv.lock": UV_LOCK}, "pytest==8.3.5"),
    ({"requirements/tests.txt": "attrs==21.4.0\n# via pytest\npytest==6.2.5  # via -r tests.in\n"}, "pytest==6.2.5"),
    # A requirements file the plan installs wins over the lock; pytest plugins are not pytest.
    ({"requirements/tests.txt": "pytest-cov==4.0\npytest[testing]==7.4.0 ; python_version >= '3.8'\n",
      "uv.lock": UV_LOCK}, "pytest==7.4.0"),
    ({"requirements/tests.txt": "pytest>=7\n"}, TOOL_REQUIREMENTS[0]),  # a range pins nothing
])
def test_a_tree_that_pins_pytest_gets_its_own_pytest(trees, files, pytest_spec):
    tree = _tree(trees["first"], files)
    plan = environment_plan(tree)
    tools = plan.pip_installs[-1]
    assert tools == [pytest_spec, TOOL_REQUIREMENTS[1]]
    assert plan.pip_installs[:-1] == plan_install(tree).pip_installs[:-1]


def test_a_sandbox_without_keyed_environments_is_refused():
    class Bare:
        name = "bare"

    with pytest.raises(SandboxError, match="the bare sandbox cannot build environments"):
        EnvironmentPool(Bare())  # type: ignore[arg-type]


def _probe(env) -> list[str]:
    session = env.session
    session.write_files({f"{session.scratch}/probe.py": PROBE})
    res = session.exec([session.python, f"{session.scratch}/probe.py", session.workspace],
                       env={"PYTHONPATH": session.workspace}, timeout=60)
    assert res.exit_code == 0, res.tail()
    return res.stdout.strip().splitlines()


def _sandbox(kind: str, cache: Path, request):
    return request.getfixturevalue("make_sandbox")(kind, Limits(timeout_sec=120, memory_mb=1024), "env-pool-test", cache)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["docker", "local"])
def test_a_dependency_change_builds_a_second_environment(kind, trees, r2e_cache, request):
    pool = EnvironmentPool(_sandbox(kind, r2e_cache, request))
    seen = {}
    for name in ("first", "same_deps", "new_deps"):
        with pool.session_for(trees[name]) as env:
            seen[name] = (env.key, _probe(env))
    assert seen["first"][0] == seen["same_deps"][0] != seen["new_deps"][0]
    # Every session imports and holds its own tree, not the tree its environment was built from.
    assert seen["first"][1] == ["first", "['__init__.py', 'only_first.py']"]
    assert seen["same_deps"][1] == ["second", "['__init__.py', 'only_second.py']"]
    assert seen["new_deps"][1] == ["third", "['__init__.py']"]
    records = {r["key"]: r for r in pool.summary()}
    assert len(records) == 2
    assert records[seen["first"][0]]["built_from"] == "first" and records[seen["first"][0]]["trees"] == 2
    assert records[seen["new_deps"][0]]["built_from"] == "new_deps"
    handles = [r["handle"] for r in pool.summary()]
    if kind == "docker":
        import docker

        client = docker.from_env()
        ids = {tag: client.images.get(tag).id for tag in handles}
        assert len(set(ids.values())) == 2
    else:
        ids = {h: (Path(h) / "bin" / "python").stat().st_mtime_ns for h in handles}
        assert len(ids) == 2 and all(Path(h).parent.name in records for h in handles)
    # A rerun (a new pool) reuses the cached environments: same handles, nothing rebuilt.
    again = EnvironmentPool(pool.sandbox)
    with again.session_for(trees["same_deps"]) as env:
        assert _probe(env)[0] == "second"
    (record,) = again.summary()
    assert record["handle"] == pool.summary()[0]["handle"]
    if kind == "docker":
        assert client.images.get(record["handle"]).id == ids[record["handle"]]
    else:
        assert (Path(record["handle"]) / "bin" / "python").stat().st_mtime_ns == ids[record["handle"]]


@pytest.mark.slow
def test_a_failed_build_is_remembered_for_the_run(tmp_path, r2e_cache, request):
    broken = _tree(tmp_path / "broken", {"pyproject.toml": PYPROJECT, "envpkg/__init__.py": "",
                                         "requirements.txt": "this-package-does-not-exist-r2e==0.0.1\n"})
    pool = EnvironmentPool(_sandbox("local", tmp_path / "cache", request))
    with pytest.raises(EnvironmentBuildError, match="preparing the local venv failed"):
        pool.session_for(broken)
    shutil.rmtree(tmp_path / "cache")  # a second attempt would rebuild; the pool must not even try
    with pytest.raises(EnvironmentBuildError, match="preparing the local venv failed"):
        pool.session_for(broken)
    assert not (tmp_path / "cache").exists() and pool.summary() == []

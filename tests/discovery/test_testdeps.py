"""Test dependencies from every source, each with its provenance; one synthetic project per source."""

from __future__ import annotations


from repo2rlenv.discovery.project import Project
from repo2rlenv.discovery.testdeps import SOURCES, discover_test_deps

PROJECT = '[project]\nname = "demo"\nversion = "1"\n'


def _found(write_tree, files):
    deps = discover_test_deps(Project(write_tree(files)))
    return ([(d.spec, d.source) for d in deps.extras], [(d.spec, d.source) for d in deps.requirements],
            [(d.spec, d.reason) for d in deps.dropped], deps.files)


def test_extras_with_test_names_win_over_dev(write_tree):
    extras, reqs, _, _ = _found(write_tree, {"pyproject.toml": PROJECT + '[project.optional-dependencies]\n'
                                             'dev = ["black"]\ntests = ["pytest"]\ndocs = ["sphinx"]\n'})
    assert extras == [("tests", "pyproject.toml [project.optional-dependencies]")] and reqs == []


def test_dev_extras_when_no_test_extra(write_tree):
    extras, _, _, _ = _found(write_tree, {"setup.py": "from setuptools import setup\n"
                                          "setup(name='demo', extras_require={'dev': ['pytest'], 'x': []})\n"})
    assert extras == [("dev", "setup.py extras_require")]


def test_dependency_groups_follow_include_group_and_self_references(write_tree):
    extras, reqs, _, _ = _found(write_tree, {"pyproject.toml": PROJECT
                                             + '[project.optional-dependencies]\nfast = ["ujson"]\n'
                                               '[dependency-groups]\ntest = ["pytest>=8", {include-group = "typing"}, '
                                               '"demo[fast]"]\ntyping = ["mypy"]\nlint = ["ruff"]\n'})
    assert reqs == [("pytest>=8", "pyproject.toml [dependency-groups] test"),
                    ("mypy", "pyproject.toml [dependency-groups] test")]
    assert extras == [("fast", "pyproject.toml [dependency-groups] test")]


def test_hatch_pdm_poetry_and_uv_environments(write_tree):
    text = (PROJECT + '[project.optional-dependencies]\ncli = ["click"]\n'
            '[tool.hatch.envs.default]\ndependencies = ["coverage[toml]"]\n'
            '[tool.hatch.envs.hatch-test]\nextra-dependencies = ["pytest-xdist"]\nfeatures = ["cli"]\n'
            '[tool.pdm.dev-dependencies]\ntest = ["freezegun", "-e file:///${PROJECT_ROOT}/plugins/x"]\n'
            '[tool.poetry.group.test.dependencies]\nhypothesis = "^6.1"\nlocal = {path = "../local"}\n'
            'pendulum = {version = "~2.1", extras = ["test"]}\n'
            '[tool.poetry.dev-dependencies]\nmock = "*"\n'
            '[tool.uv]\ndev-dependencies = ["respx"]\n')
    extras, reqs, dropped, _ = _found(write_tree, {"pyproject.toml": text})
    assert extras == [("cli", "pyproject.toml [tool.hatch.envs.hatch-test] features")]
    assert reqs == [
        ("coverage[toml]", "pyproject.toml [tool.hatch.envs.default] dependencies"),
        ("pytest-xdist", "pyproject.toml [tool.hatch.envs.hatch-test] extra-dependencies"),
        ("freezegun", "pyproject.toml [tool.pdm.dev-dependencies] test"),
        ("hypothesis>=6.1", "pyproject.toml [tool.poetry.group.test]"),
        ("pendulum[test]>=2.1", "pyproject.toml [tool.poetry.group.test]"),
        ("mock", "pyproject.toml [tool.poetry.dev-dependencies]"),
        ("respx", "pyproject.toml [tool.uv] dev-dependencies"),
    ]
    assert ("local", "a path/git/url dependency") in dropped
    assert any(spec.startswith("-e file:") for spec, _ in dropped)


def test_requirement_files_with_includes_and_directories(write_tree):
    _, reqs, dropped, files = _found(write_tree, {
        "requirements.txt": "attrs\n", "requirements/tests.txt": "-r ../requirements-common.txt\npytest\n-e .\n",
        "requirements-common.txt": "six\n", "requirements-dev.txt": "black\n"})
    assert reqs == [("attrs", "requirements.txt"), ("six", "requirements/tests.txt"),
                    ("pytest", "requirements/tests.txt")]
    assert files == ["requirements.txt", "requirements/tests.txt", "requirements-common.txt"]
    assert dropped == []  # `-e .` is the project itself, installed anyway


def test_tox_deps_extras_and_groups(write_tree):
    tox = ("[tox]\nenvlist = py3\n[base]\ndeps = six\n"
           "[testenv]\ndeps =\n    {[base]deps}\n    pytest-randomly\n    py38: importlib-metadata\n"
           "    -r{toxinidir}/req-tox.txt\n    {posargs}\nextras = cli\ndependency_groups = typing\n"
           "commands = pytest {posargs}\n")
    extras, reqs, dropped, files = _found(write_tree, {
        "pyproject.toml": PROJECT + '[project.optional-dependencies]\ncli = ["click"]\n'
                                    '[dependency-groups]\ntyping = ["mypy"]\n',
        "tox.ini": tox, "req-tox.txt": "toml\n"})
    assert extras == [("cli", "tox.ini [testenv] extras")]
    assert reqs == [("six", "tox.ini [testenv] deps"), ("pytest-randomly", "tox.ini [testenv] deps"),
                    ("toml", "tox.ini [testenv] deps → req-tox.txt"),
                    ("mypy", "pyproject.toml [dependency-groups] typing (named by tox.ini [testenv])")]
    assert ("py38: importlib-metadata", "tox factor-conditional") in dropped
    assert any(spec == "{posargs}" for spec, _ in dropped) and files == ["req-tox.txt"]


def test_tox_configuration_inside_pyproject(write_tree):
    _, reqs, _, _ = _found(write_tree, {"pyproject.toml": PROJECT + '[tool.tox]\nlegacy_tox_ini = """\n'
                                        '[testenv]\ndeps = pytest-mock\n"""\n'})
    assert reqs == [("pytest-mock", "tox configuration [testenv] deps")]


def test_tox_native_toml_in_tox_toml_and_pyproject(write_tree):
    toml = ('[env_run_base]\ndeps = ["pytest-mock", { replace = "ref", of = ["x"] }]\nextras = ["cli"]\n'
            'dependency_groups = ["test"]\n[env.test]\ndeps = ["freezegun"]\n[env.docs]\ndeps = ["sphinx-rtd"]\n')
    extras, reqs, _, _ = _found(write_tree, {
        "pyproject.toml": PROJECT + '[project.optional-dependencies]\ncli = ["click"]\n'
                                    '[dependency-groups]\ntest = ["hypothesis"]\n',
        "tox.toml": toml})
    assert extras == [("cli", "tox.toml [env_run_base] extras")]
    assert ("pytest-mock", "tox.toml [env_run_base] deps") in reqs
    assert ("freezegun", "tox.toml [env.test] deps") in reqs
    assert not [spec for spec, _ in reqs if spec.startswith("sphinx")]  # a docs env is not the test run's
    _, reqs, _, _ = _found(write_tree, {"pyproject.toml": PROJECT + '[tool.tox.env_run_base]\ndeps = ["pytest-mock"]\n'})
    assert reqs == [("pytest-mock", "pyproject.toml [tool.tox] [env_run_base] deps")]


NOXFILE = '''\
import nox

TEST_DEPS = ["pytest", "freezegun"]


@nox.session(python=["3.11"])
def tests(session):
    session.install("-e", ".[cli]")
    session.install(*TEST_DEPS, "-r", "req-nox.txt")
    session.run("pytest")


@nox.session(name="unit-tests")
def other(session):
    session.install("responses")


@nox.session
def lint(session):
    session.install("ruff")
'''


def test_nox_sessions_are_read_not_run(write_tree):
    extras, reqs, _, _ = _found(write_tree, {
        "pyproject.toml": PROJECT + '[project.optional-dependencies]\ncli = ["click"]\n',
        "noxfile.py": NOXFILE + "raise SystemExit('executed!')\n", "req-nox.txt": "toml\n"})
    assert extras == [("cli", "noxfile.py session tests")]
    assert reqs == [("pytest", "noxfile.py session tests"), ("freezegun", "noxfile.py session tests"),
                    ("toml", "noxfile.py session tests → req-nox.txt"), ("responses", "noxfile.py session other")]


def test_a_distribution_named_twice_keeps_its_first_source(write_tree):
    _, reqs, _, _ = _found(write_tree, {"pyproject.toml": PROJECT + '[dependency-groups]\ntest = ["Pytest>=8"]\n',
                                        "requirements-test.txt": "pytest==7.0\n"})
    assert reqs == [("Pytest>=8", "pyproject.toml [dependency-groups] test")]


def test_an_extra_the_project_lacks_is_dropped_with_the_reason(write_tree):
    extras, _, dropped, _ = _found(write_tree, {"pyproject.toml": PROJECT, "tox.ini": "[testenv]\nextras = testing\n"})
    assert extras == [] and dropped == [(".[testing]", "the project has no such extra")]


def test_the_source_table_names_are_unique():
    names = [name for name, _ in SOURCES]
    assert len(names) == len(set(names))


def test_lint_docs_and_release_tools_are_left_out_with_the_reason(write_tree):
    _, reqs, dropped, _ = _found(write_tree, {"pyproject.toml": PROJECT + '[dependency-groups]\ndev = ["pytest", '
                                              '"ruff>=0.5", "Sphinx", "types-requests", "pre_commit", "mypy"]\n'})
    assert reqs == [("pytest", "pyproject.toml [dependency-groups] dev"), ("mypy", "pyproject.toml [dependency-groups] dev")]
    assert [spec for spec, _ in dropped] == ["ruff>=0.5", "Sphinx", "types-requests", "pre_commit"]
    assert {reason for _, reason in dropped} == {"a lint/docs/release tool, not needed to run the tests"}

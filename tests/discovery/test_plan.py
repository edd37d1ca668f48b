"""The whole plan: what it installs, what decides its environment, and how a user reads it."""

from __future__ import annotations

from repo2rlenv.discovery.plan import TOOL_REQUIREMENTS, install_steps, plan_install

HATCH = ('[build-system]\nrequires = ["hatchling", "hatch-vcs"]\nbuild-backend = "hatchling.build"\n'
         '[project]\nname = "hv"\ndynamic = ["version"]\nrequires-python = ">=3.12"\n'
         '[project.optional-dependencies]\ntest = ["pytest"]\n[tool.hatch.version]\nsource = "vcs"\n'
         '[dependency-groups]\ntest = ["freezegun", "-e ../elsewhere"]\n')


def test_one_install_of_the_project_with_its_extras_deps_and_plugins(write_tree):
    root = write_tree({"pyproject.toml": HATCH, "tests/test_a.py": "import hypothesis\nfrom freezegun import api\n",
                       "src/hv/__init__.py": ""})
    plan = plan_install(root, version_hint="1.2.3")
    assert plan.pip_installs == [["-e", ".[test]", "freezegun", "hypothesis"], list(TOOL_REQUIREMENTS)]
    assert plan.build_env == {"SETUPTOOLS_SCM_PRETEND_VERSION": "1.2.3", "SETUPTOOLS_SCM_PRETEND_VERSION_FOR_HV": "1.2.3"}
    assert (plan.base_image, plan.python, plan.requires_python) == ("repo2rlenv-base:trixie", "3.13.5", ">=3.12")
    assert plan.import_roots == ["src"] and plan.dependency_files == ["pyproject.toml"]
    rows = dict(plan.describe())
    assert rows["build backend"] == "hatchling.build"
    assert rows["version source"].startswith("hatch-vcs — pyproject.toml [tool.hatch.version]; version 1.2.3 "
                                             "(latest git tag reachable from the ref)")
    assert rows["python"] == "3.13.5 in repo2rlenv-base:trixie (pyproject.toml [project] requires-python >=3.12)"
    labels = [label for label, _ in plan.describe()]
    assert {"extra", "test dependency", "plugin", "dropped", "install", "import roots"} <= set(labels)
    assert ("plugin", "hypothesis — tests/test_a.py imports hypothesis") in plan.describe()
    assert ("dropped", "-e ../elsewhere — pyproject.toml [dependency-groups] test: an editable install of a path") \
        in plan.describe()


def test_everything_that_changes_the_environment_changes_its_inputs(write_tree):
    root = write_tree({"pyproject.toml": HATCH})
    base = plan_install(root, version_hint="1.0").environment_inputs()
    assert plan_install(root, version_hint="1.0").environment_inputs() == base
    assert plan_install(root, version_hint="2.0").environment_inputs() != base  # the pretend version
    assert plan_install(root, version_hint="1.0", base_image="other:1").environment_inputs() != base
    (root / "tests").mkdir()
    (root / "tests" / "test_a.py").write_text("def test_x(mocker):\n    pass\n")
    assert plan_install(root, version_hint="1.0").environment_inputs() != base  # a plugin to install


def test_no_image_satisfies_requires_python_so_pip_is_told_to_ignore_it(write_tree):
    root = write_tree({"pyproject.toml": '[project]\nname = "old"\nversion = "1"\nrequires-python = "<3.8"\n'})
    plan = plan_install(root)
    assert plan.pip_installs[0][:2] == ["--ignore-requires-python", "-e"]
    assert plan.python_reason.startswith("no base image satisfies")


def test_a_tree_that_is_not_a_package_installs_only_its_requirements(write_tree):
    plan = plan_install(write_tree({"requirements-test.txt": "pytest\nsix\n", "test_x.py": "import six\n"}))
    assert not plan.installs_project and plan.version_source is None
    assert plan.pip_installs == [["pytest", "six"], list(TOOL_REQUIREMENTS)]
    assert dict(plan.describe())["project"].startswith("not installable")


def test_install_steps_give_versioneer_a_tagged_one_commit_repository_and_remove_it(write_tree):
    root = write_tree({"setup.cfg": "[versioneer]\ntag_prefix = v\n",
                       "setup.py": "import versioneer\nfrom setuptools import setup\nsetup(name='v')\n"})
    plan = plan_install(root, version_hint="3.1")
    steps = install_steps(plan, "/py")
    assert plan.git_tag == "v3.1" and plan.build_env == {}
    assert steps[:2] == [["git", "init", "-q"], ["git", "add", "-A"]]
    assert steps[3] == ["git", "tag", "v3.1"] and steps[-1] == ["rm", "-rf", ".git"]
    assert [s[:5] for s in steps[4:-1]] == [["/py", "-m", "pip", "install", "-q"]] * 2


def test_a_static_version_needs_no_build_step(write_tree):
    plan = plan_install(write_tree({"pyproject.toml": '[project]\nname = "s"\nversion = "1"\n'}), version_hint="9")
    assert plan.build_env == {} and plan.git_tag is None
    assert install_steps(plan, "/py")[0] == ["/py", "-m", "pip", "install", "-q", "-e", "."]


def test_a_requirement_excluded_by_its_marker_does_not_count_as_declared(write_tree):
    root = write_tree({"setup.py": "from setuptools import setup\nsetup(name='m', version='1')\n",
                       "requirements.txt": "hypothesis==3.1.0 ; python_version < '3.8'\npytest-mock>=3\n",
                       "tests/test_a.py": "import hypothesis\ndef test_x(mocker):\n    pass\n"})
    plan = plan_install(root)
    assert [d.spec for d in plan.plugins] == ["hypothesis"]  # pytest-mock>=3 is declared, by name


def test_a_project_that_compiles_c_extensions_says_where_and_gets_a_compiler_in_its_inputs(write_tree):
    pyproject = '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n' \
                '[project]\nname = "sp"\nversion = "1"\n'
    speedups = write_tree({"pyproject.toml": pyproject, "sp/__init__.py": "",
                           "setup.py": "from setuptools import Extension, setup\ntry:\n"
                                       "    setup(ext_modules=[Extension('sp._c', ['sp/_c.c'])])\n"
                                       "except Exception:\n    setup()\n"})
    table = write_tree({"pyproject.toml": pyproject + '[[tool.setuptools.ext-modules]]\nname = "sp._c"\n'
                                                      'sources = ["sp/_c.c"]\n', "sp/__init__.py": ""})
    commented = write_tree({"pyproject.toml": pyproject, "sp/__init__.py": "",
                            "setup.py": "from setuptools import setup\n# ext_modules = [Extension('sp._c', [])]\n"
                                        "setup()\n"})
    pure = write_tree({"pyproject.toml": pyproject, "sp/__init__.py": ""})
    plan = plan_install(speedups)
    assert plan.compiles == "setup.py declares ext_modules"
    assert dict(plan.describe())["compiler"] == ("gcc libc6-dev python3-dev added to the image when it has no C "
                                                 "compiler — setup.py declares ext_modules")
    assert plan_install(table).compiles == "pyproject.toml [tool.setuptools] ext-modules"
    assert plan_install(commented).compiles is None and plan_install(pure).compiles is None
    assert "compiler" not in dict(plan_install(pure).describe())
    # The compiler changes the built environment, so it changes what keys it.
    assert plan.environment_inputs() != plan.model_copy(update={"compiles": None}).environment_inputs()
    # The install itself is the same pip command either way.
    assert plan.pip_installs == plan_install(pure).pip_installs


def test_a_license_text_a_build_plugin_would_download_is_written_for_the_install_only(write_tree):
    pyproject = ('[build-system]\nrequires = ["setuptools>=77", "setuptools_scm[toml]>=3.4.1", "coherent.licensed"]\n'
                 'build-backend = "setuptools.build_meta"\n[project]\nname = "jk"\ndynamic = ["version"]\n'
                 'license = "MIT"\n')
    root = write_tree({"pyproject.toml": pyproject, "jk/__init__.py": ""})
    plan = plan_install(root, version_hint="7.5.0")
    assert plan.install_files == {"LICENSE": "SPDX-License-Identifier: MIT (the text is not part of the snapshot)\n"}
    assert dict(plan.describe())["install file"].startswith("LICENSE written for the install only — pyproject.toml "
                                                             "[build-system] requires coherent.licensed")
    steps = install_steps(plan, "py")
    pip = [i for i, step in enumerate(steps) if step[1:3] == ["-m", "pip"]]
    # Written before the first pip step, removed after the last: sessions see the snapshot alone.
    assert steps[pip[0] - 1][:2] == ["py", "-c"] and "LICENSE" in steps[pip[0] - 1][2]
    assert steps[pip[-1] + 1] == ["rm", "-f", "LICENSE"]
    # The step writes exactly that text.
    namespace: dict = {}
    exec(steps[pip[0] - 1][2].replace("pathlib.Path('LICENSE')", "pathlib.Path(out)"),
         {"out": str(root / "written")}, namespace)
    assert (root / "written").read_text() == plan.install_files["LICENSE"]
    # A snapshot with its own LICENSE, or a project without the plugin, installs as it is.
    (root / "LICENSE").write_text("MIT License\n")
    assert plan_install(root).install_files == {}
    plain = write_tree({"pyproject.toml": pyproject.replace(', "coherent.licensed"', ""), "jk/__init__.py": ""})
    assert plan_install(plain).install_files == {} and "install file" not in dict(plan_install(plain).describe())


def test_a_declared_dependency_the_tests_do_not_import_is_installed_on_its_own(write_tree):
    """Issue 34, item 2: what the test files import is installed with the project (its failure fails the
    environment); every other declared test/dev dependency is its own step that survives a failure."""
    pyproject = HATCH.replace('test = ["freezegun", "-e ../elsewhere"]',
                              'test = ["freezegun", "pyperf", "pytest-timeout", "python-dateutil"]')
    root = write_tree({"pyproject.toml": pyproject, "src/hv/__init__.py": "",
                       "tests/test_a.py": "from freezegun import freeze_time\nimport dateutil.parser\n"})
    plan = plan_install(root, version_hint="1.2.3")
    # pytest plugins load by entry point, never by an import: they count as used.
    assert plan.pip_installs[0] == ["-e", ".[test]", "freezegun", "pytest-timeout", "python-dateutil"]
    assert [d.spec for d in plan.optional_requirements] == ["pyperf"]
    (step,) = [s for s in install_steps(plan, "/py") if s[-1] == "pyperf"]
    assert step[:2] == ["/py", "-c"]
    assert "optional dependency" in dict(plan.describe())


def test_the_projects_runtime_requirements_are_never_optional(write_tree):
    plan = plan_install(write_tree({"requirements.txt": "attrs\n", "requirements-test.txt": "pyperf\n",
                                    "test_x.py": ""}))
    assert plan.pip_installs[0] == ["attrs"] and [d.spec for d in plan.optional_requirements] == ["pyperf"]

"""The repo's pytest configuration: read from the file pytest reads, flags that break our runs dropped by
table, and real baselines (real pytest, real coverage) on repos whose configuration used to break them."""

from __future__ import annotations

import pytest

from repo2rlenv.baseline.runner import SuiteRunner, run_baseline
from repo2rlenv.discovery.pytest_setup import (ADDOPTS_RULES, GRADED_EXCLUDED_PLUGINS, PytestSetup, graded_plugins,
                                               read_pytest_config, sanitize_addopts, suite_paths)
from repo2rlenv.sandbox.base import Limits


def test_rule_names_are_unique():
    names = [n for rule in ADDOPTS_RULES for n in rule.names]
    assert len(names) == len(set(names))


@pytest.mark.parametrize(("addopts", "kept", "dropped"), [
    ("--cov=pkg --cov-report term-missing -q", ["-q"], ["--cov=pkg", "--cov-report term-missing"]),
    ("--cov pkg -ra", ["-ra"], ["--cov pkg"]),
    ("--cov -p asyncio", ["-p", "asyncio"], ["--cov"]),  # --cov's value is optional
    ("-n auto --dist loadscope -v", ["-v"], ["-n auto", "--dist loadscope"]),
    ("-n4 -rfE", ["-rfE"], ["-n4"]),  # values attached to short options
    ("-vx --maxfail=2", ["-v"], ["-x", "--maxfail=2"]),  # a cluster of short flags
    ("--lf --sw --ff", [], ["--lf", "--sw", "--ff"]),
    ("--strict-markers --strict-config", ["--strict-markers"], ["--strict-config"]),
    ("--junitxml=out.xml --basetemp /tmp/x", [], ["--junitxml=out.xml", "--basetemp /tmp/x"]),
    ("--reruns 3 --pdb", [], ["--reruns 3", "--pdb"]),
    ("-W error --doctest-modules --import-mode=importlib -p no:randomly --timeout 30",
     ["-W", "error", "--doctest-modules", "--import-mode=importlib", "-p", "no:randomly", "--timeout", "30"], []),
])
def test_sanitize_addopts(addopts, kept, dropped):
    got_kept, got_dropped = sanitize_addopts(addopts.split())
    assert got_kept == kept
    assert sorted(got_dropped) == sorted(dropped)
    assert all(got_dropped.values())  # every drop says why


@pytest.mark.parametrize(("files", "config_file", "addopts"), [
    ({"pytest.ini": "[pytest]\naddopts = -x\n", "setup.cfg": "[tool:pytest]\naddopts = -q\n"}, "pytest.ini", ["-x"]),
    ({"pytest.ini": "", "tox.ini": "[pytest]\naddopts = -q\n"}, "pytest.ini", []),  # pytest.ini wins, even empty
    ({"pyproject.toml": '[tool.pytest.ini_options]\naddopts = ["--cov", "-q"]\n'}, "pyproject.toml", ["--cov", "-q"]),
    ({"pyproject.toml": "[project]\nname='x'\n", "tox.ini": "[pytest]\naddopts = --cov=x\n    -q\n"},
     "tox.ini", ["--cov=x", "-q"]),
    ({"tox.ini": "[tox]\nenvlist = py\n", "setup.cfg": "[tool:pytest]\naddopts = -n 2\n"}, "setup.cfg", ["-n", "2"]),
    ({"pytest.toml": '[pytest]\naddopts = ["-x"]\n'}, "pytest.toml", ["-x"]),
])
def test_reads_the_file_pytest_reads(files, config_file, addopts):
    setup = read_pytest_config(files.get)
    assert setup.config_file == config_file
    assert setup.addopts == addopts


def test_no_config_keeps_everything():
    setup = read_pytest_config(lambda _: None)
    assert setup == PytestSetup()
    assert setup.args() == ["-p", "no:enabler", "-p", "no:checkdocs", "--continue-on-collection-errors"]


def test_plugins_that_turn_on_coverage_themselves_are_never_loaded():
    # pytest-enabler (the jaraco skeleton's `enabler` extra) adds --cov when pytest-cov is installed, with
    # nothing in addopts to drop: our coverage then records no test. Blocked by name in every run...
    plain = read_pytest_config({"pytest.ini": "[pytest]\naddopts = --doctest-modules\n"}.get).args()
    assert plain[plain.index("no:enabler") - 1] == "-p"
    # ... and never among the plugins graded runs load.
    assert {"enabler", "checkdocs"} <= set(GRADED_EXCLUDED_PLUGINS)
    assert graded_plugins("py", lambda argv: '["checkdocs", "enabler", "mock"]\n') == ["mock"]
    assert plain[plain.index("no:checkdocs") - 1] == "-p"
    # A repo that names it itself keeps it (its addopts are what pytest would do).
    named = read_pytest_config({"pytest.ini": "[pytest]\naddopts = -p enabler\n"}.get).args()
    assert "no:enabler" not in named


def test_args_override_addopts_and_strict():
    setup = read_pytest_config({"pyproject.toml": '[tool.pytest.ini_options]\naddopts = "--cov=pkg -p asyncio"\n'
                                                  'strict = true\ntestpaths = ["tests"]\n'}.get)
    args = setup.args()
    assert args[:2] == ["-o", "addopts=-p asyncio"]
    # strict config off (our plugins off make ini keys unknown), the rest of pytest 9's strict mode kept
    assert "strict_config=false" in args and "strict_xfail=true" in args and "strict_markers=true" in args
    assert setup.testpaths == ["tests"] and setup.plugins == ["asyncio"]


# --- real runs ------------------------------------------------------------------------------------------------

CORE = "def add(a, b):\n    return a + b\n\ndef sub(a, b):\n    return a - b\n"
CHECKS = ("from tinypkg.core import add, sub\n\n"
          "def test_fails_first():\n    assert add(1, 1) == 3\n\n"
          "def test_add():\n    assert add(1, 2) == 3\n\n"
          "def test_sub():\n    assert sub(3, 2) == 1\n")


def _baseline(kind, request, root):
    sandbox = request.getfixturevalue("make_sandbox")(kind, Limits(timeout_sec=120), "pytest-setup-test",
                                                       request.getfixturevalue("r2e_cache"))
    sandbox.prepare(root)
    with sandbox.open() as session:
        runner = SuiteRunner(session, sandbox.plan.import_roots)
        return runner, run_baseline(runner, reruns=0, timeout=120)


def test_addopts_that_broke_the_baseline_are_neutralised(request, make_repo, tiny_package):
    """--cov without pytest-cov (exit 4 before), -x (one outcome before), -n without xdist, the repo's own
    JUnit file; python_files and filterwarnings kept: the checks are found and a warning fails its test."""
    files = tiny_package("", CORE)
    del files["tests/test_core.py"]
    files["tests/check_core.py"] = CHECKS + ("import warnings\n\ndef test_warns():\n"
                                             "    warnings.warn(DeprecationWarning('old'))\n")
    files["setup.cfg"] = ("[tool:pytest]\naddopts = --cov=tinypkg --cov-report=term -x -n 2 --junitxml=repo.xml\n"
                          "python_files = check_*.py\nfilterwarnings =\n    error\n")
    root = make_repo(files, commit=False)
    runner, report = _baseline("local", request, root)
    assert "--cov=tinypkg" in runner.pytest_setup.dropped and "-x" in runner.pytest_setup.dropped
    assert report.total == 4
    assert report.stable_passing == ["tests/check_core.py::test_add", "tests/check_core.py::test_sub"]
    assert set(report.quarantined) == {"tests/check_core.py::test_fails_first", "tests/check_core.py::test_warns"}
    assert report.coverage.tests_covering("tinypkg/core.py", [5]) == {"tests/check_core.py::test_sub"}


def test_pytest_cov_in_addopts_keeps_per_test_coverage(request, make_repo, tiny_package):
    """In Docker with pytest-cov installed by the repo's test requirements: its --cov addopts would start a
    second coverage object and leave ours with no per-test data."""
    files = tiny_package(CHECKS.replace("def test_fails_first():\n    assert add(1, 1) == 3\n\n", ""), CORE)
    files["requirements-test.txt"] = "pytest-cov\n"
    files["pytest.ini"] = "[pytest]\naddopts = --cov=tinypkg --cov-branch --cov-report=term-missing\n"
    root = make_repo(files, commit=False)
    _runner, report = _baseline("docker", request, root)
    assert report.stable_passing == ["tests/test_core.py::test_add", "tests/test_core.py::test_sub"]
    assert report.coverage.tests_covering("tinypkg/core.py", [2]) == {"tests/test_core.py::test_add"}


def test_a_collection_error_in_one_file_does_not_stop_the_suite(request, make_repo, tiny_package):
    """A test file that fails to import is recorded; the rest of the suite still runs."""
    files = tiny_package(CHECKS, CORE)
    files["tests/test_release.py"] = "import not_installed_anywhere\n\ndef test_release():\n    pass\n"
    root = make_repo(files, commit=False)
    _runner, report = _baseline("local", request, root)
    assert report.stable_passing == ["tests/test_core.py::test_add", "tests/test_core.py::test_sub"]
    assert list(report.collection_errors) == ["tests/test_release.py"]
    assert "not_installed_anywhere" in report.collection_errors["tests/test_release.py"]


def test_without_testpaths_the_suite_is_its_test_directories(request, make_repo, tiny_package):
    """No testpaths: files outside the suite's directories (a broken release script, a slow standalone
    property suite) are not collected; tests inside the package's own test directory are."""
    files = tiny_package(CHECKS, CORE)
    files["scripts/test_release.py"] = "import not_installed_anywhere\n\ndef test_release():\n    pass\n"
    files["benchmarks/test_slow.py"] = "def test_minutes():\n    assert False, 'collected'\n"
    files["tinypkg/tests/__init__.py"] = ""
    files["tinypkg/tests/test_inner.py"] = "from tinypkg.core import add\n\ndef test_inner():\n    assert add(2, 2) == 4\n"
    root = make_repo(files, commit=False)
    runner, report = _baseline("local", request, root)
    assert runner.suite_paths == ["tests", "tinypkg/tests"]
    assert report.stable_passing == ["tests/test_core.py::test_add", "tests/test_core.py::test_sub",
                                     "tinypkg/tests/test_inner.py::test_inner"]
    assert report.collection_errors == {}


def test_test_files_at_the_root_keep_the_whole_tree(request, make_repo, tiny_package):
    files = tiny_package(CHECKS.replace("def test_fails_first():\n    assert add(1, 1) == 3\n\n", ""), CORE)
    files["test_top.py"] = "def test_top():\n    pass\n"
    root = make_repo(files, commit=False)
    runner, report = _baseline("local", request, root)
    assert runner.suite_paths == []
    assert "test_top.py::test_top" in report.stable_passing


@pytest.mark.parametrize(("setup", "dirs", "paths"), [
    (PytestSetup(), ["tests"], ["tests"]),
    (PytestSetup(), ["test", "src/pkg/tests", "tests", "tests/unit/test"], ["test", "tests", "src/pkg/tests"]),
    (PytestSetup(), [], []),  # no test directory: pytest walks the tree (test.py at the root, say)
    (PytestSetup(), ["pkg/tests"], []),  # only in-package tests: the tree, which holds them and doctests
    (PytestSetup(testpaths=["tests"]), ["tests", "extra/tests"], []),  # pytest reads testpaths itself
    (PytestSetup(kept_addopts=["tests/unit"]), ["tests"], []),  # addopts name what to collect
    (PytestSetup(kept_addopts=["-q", "tests"]), ["tests"], []),
    (PytestSetup(kept_addopts=["--doctest-modules"]), ["tests"], []),  # doctests live in the modules
    (PytestSetup(kept_addopts=["--doctest-glob=*.rst"]), ["tests"], []),
    (PytestSetup(kept_addopts=["-k", "fast"]), ["tests"], ["tests"]),
    (PytestSetup(kept_addopts=["--ignore", "tests/legacy"]), ["tests"], ["tests"]),  # a value, not a path
])
def test_suite_paths(setup, dirs, paths):
    assert suite_paths(setup, dirs) == paths


# --- plugins of graded runs -----------------------------------------------------------------------------------

def test_graded_plugins_are_the_interpreters_entry_points():
    import importlib.metadata
    import subprocess
    import sys

    from repo2rlenv.discovery.pytest_setup import GRADED_EXCLUDED_PLUGINS, graded_plugins

    def run(argv):
        return subprocess.run(argv, capture_output=True, text=True, check=True).stdout

    names = {e.name for e in importlib.metadata.entry_points(group="pytest11")}
    assert names, "this interpreter has no pytest plugin to list"
    assert set(graded_plugins(sys.executable, run)) == names - set(GRADED_EXCLUDED_PLUGINS)


def test_plugins_that_change_runs_are_never_listed():
    from repo2rlenv.discovery.pytest_setup import GRADED_EXCLUDED_PLUGINS, graded_plugins

    out = '["asyncio", "pytest_cov", "pytest_mock", "randomly", "timeout", "xdist", "xdist.looponfail"]\n'
    assert graded_plugins("python", lambda argv: out) == ["asyncio", "pytest_mock"]
    assert graded_plugins("python", lambda argv: None) == []  # the command failed: nothing, never a guess
    assert all(GRADED_EXCLUDED_PLUGINS.values())


def test_a_root_tests_py_with_tests_is_collected_unless_the_repo_says_what_to_collect():
    from repo2rlenv.discovery.pytest_setup import PytestSetup, with_root_suite

    files = {"tests.py": "import unittest\n\nclass T(unittest.TestCase):\n    pass\n", "test.py": "print('a script')\n"}
    setup = with_root_suite(PytestSetup(), files.get)
    assert setup.ini_overrides == {"python_files": "test_*.py *_test.py tests.py"}  # test.py holds no test
    assert "python_files=test_*.py *_test.py tests.py" in setup.args()
    own = PytestSetup(python_files=["check_*.py"])
    assert with_root_suite(own, files.get) is own
    assert with_root_suite(PytestSetup(), {}.get) == PytestSetup()

"""Undeclared plugins from test files and pytest configuration, each table's signal on its own."""

from __future__ import annotations

import pytest

from repo2rlenv.discovery.plugins import FIXTURES, FLAGS, IMPORTS, INI_KEYS, MARKERS, discover_plugins
from repo2rlenv.discovery.project import Project


def _plugins(write_tree, files, declared=()):
    return [(d.spec, d.source) for d in discover_plugins(Project(write_tree(files)), set(declared))]


@pytest.mark.parametrize("files,expected", [
    ({"tests/conftest.py": "import hypothesis.strategies as st\n"},
     [("hypothesis", "tests/conftest.py imports hypothesis")]),
    ({"tests/test_a.py": "from freezegun import freeze_time\n"}, [("freezegun", "tests/test_a.py imports freezegun")]),
    ({"conftest.py": "pytest_plugins = ['pytest_asyncio', 'tests.fixtures']\n"},
     [("pytest-asyncio", "conftest.py pytest_plugins pytest_asyncio")]),
    ({"tests/test_a.py": "import pytest\n@pytest.mark.asyncio\nasync def test_x():\n    pass\n"},
     [("pytest-asyncio", "tests/test_a.py uses @pytest.mark.asyncio")]),
    ({"tests/test_a.py": "import pytest\n@pytest.mark.timeout(5)\ndef test_x():\n    pass\n"},
     [("pytest-timeout", "tests/test_a.py uses @pytest.mark.timeout")]),
    ({"tests/test_a.py": "def test_x(mocker, tmp_path):\n    pass\n"},
     [("pytest-mock", "tests/test_a.py test_x() takes the mocker fixture")]),
    ({"tests/a_test.py": "def test_x(benchmark):\n    pass\n"},
     [("pytest-benchmark", "tests/a_test.py test_x() takes the benchmark fixture")]),
    ({"tests/test_a.py": "import responses\n"}, [("responses", "tests/test_a.py imports responses")]),
    ({"pytest.ini": "[pytest]\nasyncio_mode = auto\naddopts = -p pytest_mock --timeout=30 -n 2\n"},
     [("pytest-asyncio", "pytest.ini sets asyncio_mode"), ("pytest-mock", "pytest.ini addopts -p pytest_mock"),
      ("pytest-timeout", "pytest.ini addopts --timeout=30"), ("pytest-xdist", "pytest.ini addopts -n")]),
    ({"pyproject.toml": '[tool.pytest.ini_options]\nrequired_plugins = "pytest-env>=1 pytest-order"\n'
                        'addopts = ["--cov=pkg"]\n'},
     [("pytest-env>=1", "pyproject.toml [tool.pytest.ini_options] required_plugins"),
      ("pytest-order", "pyproject.toml [tool.pytest.ini_options] required_plugins"),
      ("pytest-cov", "pyproject.toml [tool.pytest.ini_options] addopts --cov=pkg")]),
    ({"setup.cfg": "[tool:pytest]\ntimeout = 10\n"}, [("pytest-timeout", "setup.cfg [tool:pytest] sets timeout")]),
])
def test_each_signal_names_its_plugin_and_why(files, expected, write_tree):
    assert _plugins(write_tree, files) == expected


def test_declared_local_and_non_test_files_add_nothing(write_tree):
    files = {"tests/test_a.py": "import hypothesis\nimport mock\ndef test_x(mocker):\n    pass\n",
             "src/mock/__init__.py": "",  # the repo's own `mock` package, not the distribution
             "docs/example.py": "import freezegun\n",  # not a test file
             ".tox/py3/lib/test_x.py": "import responses\n"}
    assert _plugins(write_tree, files, declared={"hypothesis"}) == [
        ("pytest-mock", "tests/test_a.py test_x() takes the mocker fixture")]


def test_an_unparsable_test_file_is_skipped(write_tree):
    assert _plugins(write_tree, {"tests/test_bad.py": "def (:\n", "tests/test_ok.py": "import trustme\n"}) == [
        ("trustme", "tests/test_ok.py imports trustme")]


def test_tables_map_to_distribution_names():
    for table in (IMPORTS, FIXTURES, MARKERS, INI_KEYS, FLAGS):
        assert all(key and value and " " not in value for key, value in table.items())

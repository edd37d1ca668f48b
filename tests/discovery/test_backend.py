"""Version-source rules, one synthetic project per rule: what is detected and what the build is told."""

from __future__ import annotations

import pytest

from repo2rlenv.discovery.backend import VERSION_RULES, detect_version_source, rule_kinds
from repo2rlenv.discovery.project import Project

SETUPTOOLS = '[build-system]\nrequires = ["setuptools>=64"{more}]\nbuild-backend = "setuptools.build_meta"\n'

CASES = [
    ("hatch-vcs", {"pyproject.toml": '[build-system]\nrequires = ["hatchling", "hatch-vcs"]\n'
                                     'build-backend = "hatchling.build"\n[project]\nname = "My.Pkg"\n'
                                     'dynamic = ["version"]\n[tool.hatch.version]\nsource = "vcs"\n'},
     {"SETUPTOOLS_SCM_PRETEND_VERSION": "2.0", "SETUPTOOLS_SCM_PRETEND_VERSION_FOR_MY_PKG": "2.0"}, None),
    ("hatch-vcs", {"pyproject.toml": '[project]\nname = "h"\n', "hatch.toml": '[version]\nsource = "vcs"\n'},
     {"SETUPTOOLS_SCM_PRETEND_VERSION": "2.0", "SETUPTOOLS_SCM_PRETEND_VERSION_FOR_H": "2.0"}, None),
    ("setuptools-scm", {"pyproject.toml": SETUPTOOLS.format(more=', "setuptools-scm>=8"')
                        + '[project]\nname = "scm-pkg"\ndynamic = ["version"]\n[tool.setuptools_scm]\n'},
     {"SETUPTOOLS_SCM_PRETEND_VERSION_FOR_SCM_PKG": "2.0"}, None),
    ("setuptools-scm", {"setup.py": "from setuptools import setup\nsetup(name='old', use_scm_version=True)\n"},
     {"SETUPTOOLS_SCM_PRETEND_VERSION_FOR_OLD": "2.0", "SETUPTOOLS_SCM_PRETEND_VERSION": "2.0"}, None),
    ("setuptools-scm", {"setup.cfg": "[metadata]\nname = cfgpkg\n[options]\nsetup_requires =\n    setuptools_scm\n",
                        "setup.py": "from setuptools import setup\nsetup()\n"},
     {"SETUPTOOLS_SCM_PRETEND_VERSION_FOR_CFGPKG": "2.0", "SETUPTOOLS_SCM_PRETEND_VERSION": "2.0"}, None),
    # A name only computed at run time: the global form is all that can reach setuptools-scm.
    ("setuptools-scm", {"setup.py": "from setuptools import setup\nsetup(name=NAME, use_scm_version=True)\n"},
     {"SETUPTOOLS_SCM_PRETEND_VERSION": "2.0"}, None),
    ("pdm-backend scm", {"pyproject.toml": '[project]\nname = "p"\n[tool.pdm.version]\nsource = "scm"\n'},
     {"PDM_BUILD_SCM_VERSION": "2.0"}, None),
    ("flit-scm", {"pyproject.toml": '[build-system]\nrequires = ["flit_scm"]\nbuild-backend = "flit_scm:buildapi"\n'
                                    '[project]\nname = "f"\n'},
     {"SETUPTOOLS_SCM_PRETEND_VERSION": "2.0", "SETUPTOOLS_SCM_PRETEND_VERSION_FOR_F": "2.0"}, None),
    ("poetry-dynamic-versioning", {"pyproject.toml": '[tool.poetry]\nname = "pd"\nversion = "0.0.0"\n'
                                                     '[tool.poetry-dynamic-versioning]\nenable = true\n'},
     {"POETRY_DYNAMIC_VERSIONING_BYPASS": "2.0"}, None),
    ("versioneer", {"setup.cfg": "[versioneer]\nVCS = git\ntag_prefix = v\n",
                    "setup.py": "import versioneer\nfrom setuptools import setup\nsetup(name='v')\n"}, {}, "v2.0"),
    ("versioneer", {"pyproject.toml": '[tool.versioneer]\nVCS = "git"\ntag_prefix = ""\n'}, {}, "2.0"),
    ("versioningit", {"pyproject.toml": '[project]\nname = "vi"\n[tool.versioningit]\n'}, {}, "v2.0"),
    ("setuptools-git-versioning", {"pyproject.toml": '[tool.setuptools-git-versioning]\nenabled = true\n'}, {}, "v2.0"),
    ("pbr", {"setup.py": "from setuptools import setup\nsetup(setup_requires=['pbr'], pbr=True)\n"},
     {"PBR_VERSION": "2.0"}, None),
    ("static", {"pyproject.toml": SETUPTOOLS.format(more="") + '[project]\nname = "s"\nversion = "1.0"\n'}, {}, None),
    ("static", {"setup.py": "from setuptools import setup\nsetup(name='s', version='1.0')\n"}, {}, None),
    ("dynamic", {"pyproject.toml": SETUPTOOLS.format(more="") + '[project]\nname = "d"\ndynamic = ["version"]\n'
                                   '[tool.setuptools.dynamic]\nversion = {attr = "d.__version__"}\n'}, {}, None),
]


@pytest.mark.parametrize("kind,files,env,tag", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_each_version_rule_detects_its_projects_and_says_how_to_satisfy_them(kind, files, env, tag, write_tree):
    source = detect_version_source(Project(write_tree(files)), "2.0")
    assert (source.kind, source.build_env, source.git_tag) == (kind, env, tag)
    assert source.declared_in  # a user can see where it was found


def test_the_rule_table_has_unique_kinds_and_every_rule_is_exercised():
    assert len(rule_kinds()) == len(VERSION_RULES)
    assert {rule.kind for rule in VERSION_RULES} <= {case[0] for case in CASES}


def test_the_backend_is_named_as_declared(write_tree):
    hatch = detect_version_source(Project(write_tree({"pyproject.toml": CASES[0][1]["pyproject.toml"]})), "1")
    legacy = detect_version_source(Project(write_tree({"setup.py": "from setuptools import setup\nsetup()\n"})), "1")
    assert (hatch.backend, legacy.backend) == ("hatchling.build", "setup.py (legacy setuptools)")

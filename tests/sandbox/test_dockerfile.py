"""One renderer for the sandbox image and the task image: same build args, same install steps."""

from __future__ import annotations

from repo2rlenv.discovery.plan import plan_install
from repo2rlenv.pipelines.test_synthesis.emit.emit import render_task_dockerfile
from repo2rlenv.sandbox.docker import render_dockerfile


def _section(text: str) -> str:
    """From the first ARG (or the RUN) through the install RUN: what both images must share."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(("ARG ", "# (no build")))
    end = next(i for i, line in enumerate(lines) if i > start and line.startswith("RUN ") and "pip" in line)
    while lines[end].endswith("\\"):
        end += 1
    return "\n".join(lines[start:end + 1])


def test_sandbox_and_task_images_install_the_same_way(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["hatchling", "hatch-vcs"]\nbuild-backend = "hatchling.build"\n'
        '[project]\nname = "hv"\ndynamic = ["version"]\n[tool.hatch.version]\nsource = "vcs"\n'
        '[dependency-groups]\ntest = ["freezegun"]\n')
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text("import freezegun\n")
    plan = plan_install(tmp_path, version_hint="1.2.3")
    sandbox, task = render_dockerfile(plan.base_image, plan), render_task_dockerfile(plan.base_image, plan)
    assert _section(sandbox) == _section(task)
    assert "ARG SETUPTOOLS_SCM_PRETEND_VERSION_FOR_HV=1.2.3" in task
    # Build arguments, never ENV: containers of either image must not see a pretend version.
    assert "ENV " not in sandbox and "ENV " not in task
    assert "/opt/venv/bin/python -m pip install -q -e . freezegun" in task
    assert task.startswith("# Task environment") and "FROM repo2rlenv-base:bookworm" in task


def test_a_plan_with_nothing_to_pretend_says_so(tmp_path):
    (tmp_path / "setup.py").write_text("from setuptools import setup\nsetup(name='s', version='1')\n")
    plan = plan_install(tmp_path)
    assert "# (no build variables" in render_task_dockerfile(plan.base_image, plan)
    assert "ARG " not in render_dockerfile(plan.base_image, plan)


def test_a_project_with_c_extensions_gets_a_compiler_before_its_install_in_both_images(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[build-system]\nrequires = ["setuptools"]\n'
                                             'build-backend = "setuptools.build_meta"\n'
                                             '[project]\nname = "sp"\nversion = "1"\n')
    (tmp_path / "setup.py").write_text("from setuptools import Extension, setup\n"
                                       "setup(ext_modules=[Extension('sp._c', ['sp/_c.c'])])\n")
    plan = plan_install(tmp_path)
    sandbox, task = render_dockerfile(plan.base_image, plan), render_task_dockerfile(plan.base_image, plan)
    run = sandbox.split("\nRUN sh -c ", 1)[1]
    run = "sh -c " + run[:run.index("\n", run.index("pip install"))]
    assert run in task
    compiler, pip = run.split(" \\\n && ", 1)
    # Only an image without `cc` is changed, and an image where apt cannot run still gets to the install.
    assert compiler.startswith("sh -c 'command -v cc >/dev/null || {")
    assert "apt-get install -y -qq --no-install-recommends gcc libc6-dev python3-dev" in compiler
    assert "|| echo '\"'\"'repo2rlenv: no C compiler could be installed'\"'\"' >&2; }'" in compiler
    assert pip.startswith("/opt/venv/bin/python -m pip install -q -e .")
    (tmp_path / "setup.py").write_text("from setuptools import setup\nsetup()\n")
    assert "apt-get" not in render_dockerfile(plan.base_image, plan_install(tmp_path))

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

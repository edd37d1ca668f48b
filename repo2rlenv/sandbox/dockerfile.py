"""Render an install plan into a Dockerfile: the one renderer behind the sandbox image and the emitted
task's image, so both install exactly the same way.

The plan's build variables (pretend versions) become `ARG`s: Docker exports them to the `RUN` steps that
follow but not to containers of the image, so a test suite never runs with a pretend version set.
"""

from __future__ import annotations

import shlex
from importlib import resources
from string import Template

from repo2rlenv.discovery.plan import InstallPlan, install_steps

VENV_PYTHON = "/opt/venv/bin/python"


def build_args(plan: InstallPlan) -> str:
    """`ARG NAME=value` lines for the plan's build variables (a comment when there are none)."""
    if not plan.build_env:
        return "# (no build variables: the version needs no pretending)"
    return "\n".join(f"ARG {name}={value}" for name, value in sorted(plan.build_env.items()))


def install_commands(plan: InstallPlan) -> str:
    """The plan's install steps as one shell command list (`a \\\n && b`)."""
    return " \\\n && ".join(shlex.join(step) for step in install_steps(plan, VENV_PYTHON))


def render_dockerfile(package: str, template: str, plan: InstallPlan, base_image: str | None = None) -> str:
    """Template `template` of `package` filled with the plan (FROM `base_image`, default the plan's)."""
    text = resources.files(package).joinpath(template).read_text()
    return Template(text).substitute(base_image=base_image or plan.base_image, build_args=build_args(plan),
                                     install_commands=install_commands(plan))

"""Render an install plan into a Dockerfile: the one renderer behind the sandbox image and the emitted
task's image, so both install exactly the same way.

The plan's build variables (pretend versions) become `ARG`s: Docker exports them to the `RUN` steps that
follow but not to containers of the image, so a test suite never runs with a pretend version set.
"""

from __future__ import annotations

import shlex
from importlib import resources
from string import Template

from repo2rlenv.discovery.plan import COMPILER_PACKAGES, InstallPlan, install_steps

VENV_PYTHON = "/opt/venv/bin/python"


def build_args(plan: InstallPlan) -> str:
    """`ARG NAME=value` lines for the plan's build variables (a comment when there are none)."""
    if not plan.build_env:
        return "# (no build variables: the version needs no pretending)"
    return "\n".join(f"ARG {name}={value}" for name, value in sorted(plan.build_env.items()))


def compiler_step(plan: InstallPlan) -> list[str]:
    """A shell step giving an image without a C compiler one (and its Python's headers) when the plan's
    project compiles C extensions; nothing otherwise. A base image that has `cc` is left as it is; one
    without apt-get, or whose package sources are unreachable, goes on to the install, whose failure then
    names the missing compiler."""
    if not plan.compiles:
        return []
    packages = " ".join(COMPILER_PACKAGES)
    script = (f"command -v cc >/dev/null || {{ command -v apt-get >/dev/null"
              f" && apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq"
              f" --no-install-recommends {packages} >/dev/null && rm -rf /var/lib/apt/lists/*"
              f" || echo 'repo2rlenv: no C compiler could be installed' >&2; }}")
    return ["sh", "-c", script]


def install_commands(plan: InstallPlan) -> str:
    """The plan's install steps as one shell command list (`a \\\n && b`), after the compiler step when the
    project compiles C extensions."""
    steps = install_steps(plan, VENV_PYTHON)
    if plan.compiles:
        steps = [compiler_step(plan), *steps]
    return " \\\n && ".join(shlex.join(step) for step in steps)


def render_dockerfile(package: str, template: str, plan: InstallPlan, base_image: str | None = None) -> str:
    """Template `template` of `package` filled with the plan (FROM `base_image`, default the plan's)."""
    text = resources.files(package).joinpath(template).read_text()
    return Template(text).substitute(base_image=base_image or plan.base_image, build_args=build_args(plan),
                                     install_commands=install_commands(plan))

"""Environment discovery: what a repo snapshot needs to be installed and tested, and where each fact
came from. `plan_install(root)` returns the `InstallPlan` every environment is built from.

  project.py       the packaging files, parsed once
  backend.py       the build backend and the version source (a rule table; pretend-version variables)
  version.py       the version to tell a VCS backend (latest tag, .git_archival.txt, PKG-INFO, 0.0.0)
  testdeps.py      test dependencies from extras, dependency groups, hatch/pdm/poetry/uv, requirement
                   files, tox and nox, each with its provenance
  requirements.py  one requirement line → installable here, or dropped with a reason
  plugins.py       undeclared plugins the suite uses (imports, markers, fixtures, pytest config)
  python.py        the base image whose Python satisfies requires-python
  plan.py          the plan itself and the install steps every environment runs
"""

from repo2rlenv.discovery.plan import TOOL_REQUIREMENTS, InstallPlan, detect_import_roots, install_steps, plan_install

__all__ = ["TOOL_REQUIREMENTS", "InstallPlan", "detect_import_roots", "install_steps", "plan_install"]
